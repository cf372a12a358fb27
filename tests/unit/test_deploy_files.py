"""What can be checked of the Kubernetes and Databricks recipes without either platform: the
files parse, the image definition copies only what exists and is let into the build context,
the entry point speaks the protocol of PySpark's own Kubernetes scheduler, and every
configuration key the recipes set exists."""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import tomllib
import zipfile
from pathlib import Path

from groupwatch import config

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "kubernetes"
DATABRICKS = ROOT / "deploy" / "databricks" / "databricks.yml"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
WHEEL = f"groupwatch-{PYPROJECT['project']['version']}-py3-none-any.whl"


def _instructions() -> list[tuple[str, str]]:
    text = (K8S / "Dockerfile").read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _let_in(path: str) -> bool:
    """Whether Dockerfile.dockerignore lets ``path`` into the build context (last rule wins)."""
    allowed = True
    for rule in (K8S / "Dockerfile.dockerignore").read_text().splitlines():
        rule = rule.strip()
        if not rule or rule.startswith("#"):
            continue
        negated = rule.startswith("!")
        pattern = rule.lstrip("!").rstrip("/")
        if fnmatch.fnmatch(path, pattern) or path.startswith(pattern + "/"):
            allowed = negated
    return allowed


def test_the_image_copies_only_what_setup_and_package_produce() -> None:
    copies = [rest.split() for word, rest in _instructions() if word == "COPY"]
    assert copies
    produced = {
        f"dist/{WHEEL}": "scripts/package",
        ".groupwatch/jars/spark/": "scripts/setup",
    }
    for *sources, _dest in copies:
        for source in sources:
            assert _let_in(source.rstrip("/")), f"{source} is left out of the build context"
            if source in produced:
                continue  # made by a script; its name is checked below
            assert (ROOT / source).exists(), f"the Dockerfile copies {source}, which is missing"
    sources = {s for *srcs, _ in copies for s in srcs}
    assert set(produced) <= sources, "the image needs the wheel and the jars"
    # The names those scripts produce.
    assert re.search(r'cp "\$wheel" "\$out/"', (ROOT / "scripts" / "package").read_text())
    assert 'jars/spark"' in (ROOT / "scripts" / "setup").read_text()


def test_the_image_runs_the_python_the_package_requires() -> None:
    base = next(rest for word, rest in _instructions() if word == "FROM")
    version = re.match(r"python:(\d+\.\d+)", base)
    assert version, base
    assert PYPROJECT["project"]["requires-python"] == f">={version[1]},<3.12"
    entry = next(rest for word, rest in _instructions() if word == "ENTRYPOINT")
    assert "/opt/groupwatch/entrypoint.sh" in entry
    copied = [rest for word, rest in _instructions() if word == "COPY"]
    assert "deploy/kubernetes/entrypoint.sh /opt/groupwatch/entrypoint.sh" in copied


def _dry_run(*args: str, **env: str) -> list[str]:
    proc = subprocess.run(
        ["bash", str(K8S / "entrypoint.sh"), *args],
        env={"PATH": os.environ["PATH"], "GROUPWATCH_ENTRYPOINT_DRY_RUN": "1", **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout.splitlines()


EXECUTOR_ENV = {
    "SPARK_HOME": "/spark",
    "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@driver:7078",
    "SPARK_EXECUTOR_ID": "3",
    "SPARK_EXECUTOR_CORES": "2",
    "SPARK_EXECUTOR_MEMORY": "2g",
    "SPARK_APPLICATION_ID": "spark-app",
    "SPARK_EXECUTOR_POD_IP": "10.0.0.7",
    "SPARK_EXECUTOR_POD_NAME": "groupwatch-exec-3",
    "SPARK_RESOURCE_PROFILE_ID": "0",
    "SPARK_CLASSPATH": "/opt/groupwatch/jars/*",
    "SPARK_JAVA_OPT_0": "-Dfirst",
    "SPARK_JAVA_OPT_10": "-Dlast",
    "SPARK_JAVA_OPT_2": "-Dsecond",
}


def test_entrypoint_parses_and_builds_the_commands() -> None:
    subprocess.run(["bash", "-n", str(K8S / "entrypoint.sh")], check=True)
    executor = _dry_run("executor", **EXECUTOR_ENV)
    assert executor[:4] == ["java", "-Dfirst", "-Dsecond", "-Dlast"]
    assert executor[executor.index("-cp") + 1] == "/spark/jars/*:/opt/groupwatch/jars/*"
    assert "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend" in executor
    options = dict(zip(executor[-14::2], executor[-13::2], strict=True))
    assert options == {
        "--driver-url": "spark://CoarseGrainedScheduler@driver:7078",
        "--executor-id": "3",
        "--cores": "2",
        "--app-id": "spark-app",
        "--hostname": "10.0.0.7",
        "--resourceProfileId": "0",
        "--podName": "groupwatch-exec-3",
    }
    driver = _dry_run(
        "driver", "--properties-file", "/opt/spark/conf/spark.properties", "app.py",
        SPARK_HOME="/spark", SPARK_DRIVER_BIND_ADDRESS="10.0.0.5",
    )  # fmt: skip
    assert driver[0] == "/spark/bin/spark-submit"
    assert "spark.driver.bindAddress=10.0.0.5" in driver
    assert driver[-5:] == [
        "--deploy-mode", "client", "--properties-file", "/opt/spark/conf/spark.properties",
        "app.py",
    ]  # fmt: skip
    assert _dry_run("groupwatch", "dashboard") == ["groupwatch", "dashboard"]


def _kubernetes_jar_strings() -> bytes:
    import pyspark

    jars = list((Path(pyspark.__file__).parent / "jars").glob("spark-kubernetes_*.jar"))
    assert len(jars) == 1, jars
    with zipfile.ZipFile(jars[0]) as jar:
        return b"\n".join(jar.read(name) for name in jar.namelist() if name.endswith(".class"))


def test_entrypoint_uses_only_names_sparks_kubernetes_scheduler_defines() -> None:
    script = (K8S / "entrypoint.sh").read_text()
    classes = _kubernetes_jar_strings()
    variables = set(re.findall(r"\$\{?(SPARK_[A-Z_]+)", script)) - {"SPARK_HOME"}
    assert "SPARK_EXECUTOR_POD_IP" in variables  # the pattern finds them
    for name in sorted(variables | {"SPARK_JAVA_OPT_"}):
        assert name.encode() in classes, name
    options = set(re.findall(r"^\s+(--[A-Za-z-]+) \"\$SPARK_", script, flags=re.M))
    assert len(options) == 7
    for option in sorted(options):
        assert option.encode() in classes, option
    assert b"org/apache/spark/scheduler/cluster/k8s/KubernetesExecutorBackend" in classes


def test_kubernetes_recipe_sets_configuration_keys() -> None:
    doc = (ROOT / "docs" / "deploy.md").read_text()
    env = dict(re.findall(r"driverEnv\.(GROUPWATCH_[A-Z_]+)=(\S+)", doc))
    assert len(env) >= 3
    cfg = config.load(None, env=env)
    assert cfg.delta.root.startswith("s3a://") and cfg.metrics.host == "0.0.0.0"


def test_databricks_bundle_parses_and_names_the_entry_point() -> None:
    from ruamel.yaml import YAML

    bundle = YAML(typ="safe").load(DATABRICKS.read_text())
    task = bundle["resources"]["jobs"]["groupwatch"]["tasks"][0]
    wheel_task = task["python_wheel_task"]
    assert wheel_task["package_name"] == PYPROJECT["project"]["name"]
    assert wheel_task["entry_point"] in PYPROJECT["project"]["scripts"]
    assert task["libraries"] == [{"whl": f"../../dist/{WHEEL}"}]
    assert bundle["artifacts"]["groupwatch"]["build"] == "scripts/package"
    assert (DATABRICKS.parent / bundle["artifacts"]["groupwatch"]["path"]).resolve() == ROOT
    args = wheel_task["parameters"]
    assert args[0] == "run"
    settings = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    variables = set(bundle["variables"])
    filled = [re.sub(r"\$\{var\.(\w+)\}", lambda m: f"x-{m[1]}", s) for s in settings]
    assert all(m in variables for s in settings for m in re.findall(r"\$\{var\.(\w+)\}", s))
    config.load(None, env={}, overrides=filled)  # every key exists
