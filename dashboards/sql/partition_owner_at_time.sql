-- Who owned topic-partition ${topic}-${partition} of group ${group} at time ${at}?
-- Placeholders: ${delta_root}, ${group}, ${topic} (quoted strings), ${partition} (integer),
-- ${at} (a timestamp literal such as TIMESTAMP'2026-01-01 12:00:00'). More than one row means
-- two members owned it at once (an overlap).
SELECT member_id, client_id, from_generation, from_time, to_generation, to_time
FROM delta.`${delta_root}/partition_ownership`
WHERE `group` = ${group}
  AND topic = ${topic}
  AND `partition` = ${partition}
  AND from_time <= ${at}
  AND (to_time IS NULL OR to_time > ${at})
ORDER BY from_time, member_id
