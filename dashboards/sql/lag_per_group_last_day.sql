-- Lag per group over the last day, by hour: the most records behind (summed over the group's
-- topics at each poll), the most seconds behind (its slowest partition) and the worst status
-- in the hour (stopped > stalled > rewound > lagging > ok > idle, docs/lag.md).
-- Placeholders: ${delta_root}. Reads lag_history (one row per group, topic and poll).
WITH per_poll AS (
  SELECT `group`,
         observed_at,
         SUM(lag_records) AS lag_records,
         MAX(lag_seconds) AS lag_seconds,
         MIN(CASE status WHEN 'stopped' THEN 0 WHEN 'stalled' THEN 1 WHEN 'rewound' THEN 2
                         WHEN 'lagging' THEN 3 WHEN 'ok' THEN 4 WHEN 'idle' THEN 5
                         ELSE 6 END) AS worst
  FROM delta.`${delta_root}/lag_history`
  WHERE observed_at >= current_timestamp() - INTERVAL 1 DAY
  GROUP BY `group`, observed_at
)
SELECT `group`,
       date_trunc('HOUR', observed_at) AS hour,
       MAX(lag_records) AS max_lag_records,
       CAST(ROUND(AVG(lag_records)) AS BIGINT) AS avg_lag_records,
       MAX(lag_seconds) AS max_lag_seconds,
       element_at(array('stopped', 'stalled', 'rewound', 'lagging', 'ok', 'idle', 'unknown'),
                  MIN(worst) + 1) AS worst_status,
       COUNT(*) AS polls
FROM per_poll
GROUP BY `group`, date_trunc('HOUR', observed_at)
ORDER BY `group`, hour
