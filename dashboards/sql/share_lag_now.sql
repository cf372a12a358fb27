-- Share groups (KIP-932 queues) now, per group and topic: share lag (Kafka's formula, summed
-- over the topic's share partitions; null where no partition's is known), records in flight,
-- records archived undelivered and still past the start offset, the highest delivery count,
-- and when the newest share state was written. Worst first.
-- Placeholders: ${delta_root}. Reads share_partition_state (one row per share partition).
SELECT `group`,
       COALESCE(topic, topic_id) AS topic,
       COUNT(*) AS partitions,
       SUM(lag_records) AS share_lag_records,
       SUM(in_flight_records) AS in_flight_records,
       SUM(archived_records) AS archived_records,
       MAX(max_delivery_count) AS max_delivery_count,
       MAX(observed_at) AS newest_state_at
FROM delta.`${delta_root}/share_partition_state`
GROUP BY `group`, COALESCE(topic, topic_id)
ORDER BY archived_records DESC, share_lag_records DESC NULLS LAST, `group`, topic
