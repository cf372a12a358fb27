-- What failed to decode or validate, by stage and error kind, with an example position.
-- Placeholders: ${delta_root}.
SELECT stage, error_kind,
       count(*)                                   AS records,
       count(DISTINCT `group`)                    AS groups,
       min(source_timestamp)                      AS first_seen,
       max(source_timestamp)                      AS last_seen,
       min_by(concat(source_topic, '/', source_partition, '@', source_offset, ' ',
                     coalesce(field_path, '')), source_offset) AS example
FROM delta.`${delta_root}/quarantine`
GROUP BY stage, error_kind
ORDER BY records DESC
