-- Which member owned the partition that stopped? Every consumer_stopped finding (newest first)
-- with the owner it names (member, client, host, generation from its evidence), who owned the
-- partition when it was detected by the ownership history (more than one row: an overlap too),
-- and the partition now: its status, lag and owner in partition_lag.
-- Placeholders: ${delta_root}, ${since} (a timestamp expression such as
-- current_timestamp() - INTERVAL 7 DAYS). For stalls, rewinds or lagging, change the kind.
SELECT f.`group`,
       f.topic,
       f.`partition`,
       f.detected_at,
       f.member AS stopped_member,
       get_json_object(f.evidence, '$.owner_client') AS stopped_client,
       get_json_object(f.evidence, '$.owner_host') AS stopped_host,
       CAST(get_json_object(f.evidence, '$.owner_generation') AS INT) AS stopped_generation,
       CAST(get_json_object(f.evidence, '$.lag_records') AS BIGINT) AS lag_records_then,
       o.member_id AS owner_by_history,
       o.client_id AS owner_client_by_history,
       o.from_generation AS owner_since_generation,
       l.status AS status_now,
       l.lag_records AS lag_records_now,
       l.owner_member AS owner_now,
       f.detail
FROM delta.`${delta_root}/findings` f
LEFT JOIN delta.`${delta_root}/partition_ownership` o
  ON o.`group` = f.`group` AND o.topic = f.topic AND o.`partition` = f.`partition`
 AND o.from_time <= f.detected_at AND (o.to_time IS NULL OR o.to_time > f.detected_at)
 -- An interval that closed before ${since} cannot hold a finding detected after it: this lets
 -- Spark skip the days intervals closed on before then (the table's partitions); to_date is
 -- a UTC day, hence the day's margin.
 AND (o.to_date IS NULL OR o.to_date >= date_sub(CAST(${since} AS DATE), 1))
LEFT JOIN delta.`${delta_root}/partition_lag` l
  ON l.`group` = f.`group` AND l.topic = f.topic AND l.`partition` = f.`partition`
WHERE f.kind = 'consumer_stopped'
  AND f.detected_at >= ${since}
ORDER BY f.detected_at DESC, f.`group`, f.topic, f.`partition`, o.member_id
