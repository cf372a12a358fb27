-- Findings per UTC day, kind and severity over the last 30 days (trend of each problem).
-- Placeholders: ${delta_root}.
SELECT to_date(detected_at)            AS day,
       severity,
       kind,
       count(*)                        AS findings,
       count(DISTINCT `group`)         AS groups
FROM delta.`${delta_root}/findings`
WHERE detected_at >= current_timestamp() - INTERVAL 30 DAYS
GROUP BY to_date(detected_at), severity, kind
ORDER BY day DESC,
         CASE severity WHEN 'critical' THEN 0 WHEN 'error' THEN 1 WHEN 'warning' THEN 2 ELSE 3 END,
         findings DESC
