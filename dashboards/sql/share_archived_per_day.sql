-- Records share groups archived undelivered (poison records: their delivery attempts ran out,
-- or a consumer rejected them), per group, topic and UTC day of detection, from the
-- share_records_archived findings: how many records, on which partitions, which offsets.
-- Placeholders: ${delta_root}. Reads findings.
SELECT `group`,
       topic,
       to_date(detected_at) AS day,
       COUNT(*) AS findings,
       SUM(CAST(get_json_object(evidence, '$.archived_records') AS BIGINT)) AS archived_records,
       array_sort(collect_set(`partition`)) AS partitions,
       array_sort(collect_list(concat(CAST(`partition` AS STRING), '@',
                                      get_json_object(evidence, '$.archived_offsets')))) AS offsets
FROM delta.`${delta_root}/findings`
WHERE kind = 'share_records_archived'
GROUP BY `group`, topic, to_date(detected_at)
ORDER BY day DESC, archived_records DESC, `group`, topic
