#!/usr/bin/env bash
# Entry point of the groupwatch image. Spark's Kubernetes scheduler starts the driver pod with
# `driver <spark-submit arguments>` and each executor pod with `executor`, the executor's
# settings being in SPARK_* environment variables; any other command runs as given (e.g.
# `groupwatch dashboard`). GROUPWATCH_ENTRYPOINT_DRY_RUN=1 prints the command instead.
set -euo pipefail

launch() {
  if [ -n "${GROUPWATCH_ENTRYPOINT_DRY_RUN:-}" ]; then
    printf '%s\n' "$@"
  else
    exec "$@"
  fi
}

case "${1:-}" in
  driver)
    shift
    # The driver pod runs spark-submit in client mode inside itself; executors reach it at
    # the pod's address.
    launch "$SPARK_HOME/bin/spark-submit" \
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS}" \
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=${SPARK_DRIVER_BIND_ADDRESS}" \
      --deploy-mode client "$@"
    ;;
  executor)
    shift
    # Java options come as SPARK_JAVA_OPT_0, _1, ... in order.
    java_opts=()
    while IFS= read -r name; do
      java_opts+=("${!name}")
    done < <(compgen -e | grep '^SPARK_JAVA_OPT_' | sort -t_ -k4 -n)
    # SPARK_CLASSPATH is spark.executor.extraClassPath (the recipe puts the image's jars there).
    classpath="$SPARK_HOME/jars/*${SPARK_CLASSPATH:+:$SPARK_CLASSPATH}"
    launch java "${java_opts[@]}" \
      -Xms"$SPARK_EXECUTOR_MEMORY" -Xmx"$SPARK_EXECUTOR_MEMORY" -cp "$classpath" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "$SPARK_DRIVER_URL" \
      --executor-id "$SPARK_EXECUTOR_ID" \
      --cores "$SPARK_EXECUTOR_CORES" \
      --app-id "$SPARK_APPLICATION_ID" \
      --hostname "$SPARK_EXECUTOR_POD_IP" \
      --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID" \
      --podName "$SPARK_EXECUTOR_POD_NAME"
    ;;
  *)
    launch "$@"
    ;;
esac
