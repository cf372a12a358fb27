-- Groups with a critical finding in the last 7 days, worst first.
-- Placeholders: ${delta_root} (the job's delta.root). Spark SQL, e.g. spark-sql or a notebook.
SELECT `group`,
       count(*)                         AS critical_findings,
       count(DISTINCT kind)             AS kinds,
       collect_set(kind)                AS which,
       min(generation)                  AS first_generation,
       max(generation)                  AS last_generation,
       max(detected_at)                 AS last_detected_at
FROM delta.`${delta_root}/findings`
WHERE severity = 'critical'
  AND detected_at >= current_timestamp() - INTERVAL 7 DAYS
GROUP BY `group`
ORDER BY critical_findings DESC, `group`
