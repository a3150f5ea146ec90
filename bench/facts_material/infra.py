"""Infrastructure: hosts, ports, clusters, CI runners, DNS, backups and monitoring."""

from __future__ import annotations

from random import Random

from bench.facts_material import Domain, Fact, chain, f, hop, notes, v

CC, CX, GM = "claude-code", "codex", "gemini-cli"

FACTS = (
    f(
        "dns-owner",
        "Sanjay Iyer owns the Cloudflare account and approves any DNS change on example.net",
        tags=("dns",),
        who="who do I ask before changing a public DNS record?",
    ),
    f(
        "gpu-quota",
        "Requested a GPU quota increase to 16 A100s in europe-west4; support case CS-88213",
        "action-item",
        agent=GM,
        tags=("cost",),
        who="which agent asked the cloud provider for more accelerators?",
        identifier="CS-88213",
    ),
    f(
        "runbooks",
        "Runbooks live in the ops-runbooks repo; Lena reviews every new one",
        tags=("oncall",),
        who="who reviews new runbooks?",
    ),
    f(
        "pg-staging-port",
        "Staging Postgres listens on port 5433 on db-staging-1.internal (5432 is the old 9.6 instance)",
        tags=("postgres",),
        identifier="db-staging-1.internal",
        paraphrase="which host and port do I connect to for the pre-production relational database?",
    ),
    f(
        "redis-port",
        "Redis for sessions runs on cache-2.internal:6380 with TLS; plain 6379 is disabled",
        tags=("redis",),
        identifier="cache-2.internal:6380",
    ),
    f(
        "grafana",
        "Grafana is at grafana.ops.example.net; the SLO dashboards are in the folder 'Platform SLOs'",
        tags=("monitoring",),
        paraphrase="where do I look at the service level objective charts?",
    ),
    f(
        "tf-state",
        "Terraform state lives in the S3 bucket acme-tfstate-prod with DynamoDB locking (table tf-locks)",
        tags=("terraform",),
        identifier="acme-tfstate-prod",
        paraphrase="where is the infrastructure-as-code state file stored and how is it locked?",
    ),
    f(
        "runner-labels",
        "Self-hosted GitHub runners use the label `linux-x64-large`; ARM builds use `linux-arm64`",
        tags=("ci",),
        identifier="linux-x64-large",
    ),
    f(
        "oom-ingest",
        "ingest-worker pods get OOMKilled at 512Mi during the Monday backfill; limit raised to 1Gi for that job only",
        "finding",
        tags=("k8s",),
        identifier="OOMKilled ingest-worker",
        paraphrase="why do the ingestion pods die every start of the week?",
    ),
    f(
        "backup-time",
        "Nightly Postgres base backups run at 02:30 UTC with pgBackRest to the eu-west-1 bucket; retention 14 days",
        tags=("backup",),
        agent=CX,
        paraphrase="when do the database snapshots happen each night and how long are they kept?",
        who="which agent set up the nightly database backups?",
    ),
    f(
        "dns-provider",
        "DNS for example.net is on Cloudflare; internal zones (*.internal) are served by CoreDNS in the ops cluster",
        tags=("dns",),
        paraphrase="who resolves our private hostnames?",
    ),
    f(
        "oncall-owner",
        "Lena Fischer runs the infra on-call rotation and owns the PagerDuty schedule",
        tags=("oncall",),
        who="who manages the infrastructure pager schedule?",
    ),
    f(
        "ingress",
        "ingress-nginx was replaced by Envoy Gateway in the prod cluster; HTTPRoutes live in deploy/gateway/routes/",
        "decision",
        tags=("k8s",),
        identifier="deploy/gateway/routes/",
        who="which agent recorded the move away from ingress-nginx?",
        agent=CC,
    ),
    f(
        "kubectl-ctx",
        "Use `kubectl --context prod-eu` for production; the default context is staging on purpose",
        tags=("k8s",),
        identifier="kubectl --context prod-eu",
    ),
    f(
        "disk-alert",
        "Alert DiskWillFillIn4Hours on logs-1 is noisy: journald vacuum runs only weekly",
        "finding",
        tags=("monitoring",),
        identifier="DiskWillFillIn4Hours",
    ),
    f(
        "vpn",
        "Office VPN is WireGuard on vpn.example.net:51820; configs are issued by the `wgctl` tool",
        tags=("network",),
        identifier="vpn.example.net:51820",
        paraphrase="how do people get onto the company network from home?",
    ),
    f(
        "nats-port",
        "NATS cluster listens on 4222 for clients and 6222 for routes; monitoring on 8222",
        tags=("nats",),
        identifier="port 6222",
        paraphrase="what ports does the message bus use for client and cluster traffic?",
    ),
    f(
        "node-pools",
        "Prod cluster has two node pools: general (e2-standard-8) and gpu (a2-highgpu-1g, scale to zero)",
        tags=("k8s",),
        paraphrase="which machine shapes make up the production cluster?",
    ),
    f(
        "cost-owner",
        "Marcus Webb owns the cloud cost budget and gets the monthly FinOps report",
        tags=("cost",),
        who="who is responsible for what we spend on cloud?",
    ),
    f(
        "argo",
        "Deploys go through Argo CD; the app-of-apps is in infra/argocd/root.yaml",
        tags=("cd",),
        identifier="infra/argocd/root.yaml",
        paraphrase="what tool rolls out new versions to the clusters?",
    ),
    f(
        "ssh-bastion",
        "SSH to private hosts only through bastion.example.net with `ssh -J`",
        tags=("network",),
        identifier="ssh -J bastion.example.net",
    ),
    f(
        "log-retention",
        "Loki keeps logs 30 days; anything older is in the cold bucket for a year",
        tags=("logs",),
        paraphrase="how far back can I search application logs?",
    ),
    f(
        "cert-error",
        "x509: certificate signed by unknown authority on the build runners means the internal CA bundle "
        "is missing from the image; rebuild with base-image >= 1.9",
        "finding",
        tags=("ci",),
        identifier="x509: certificate signed by unknown authority",
    ),
    f(
        "mtu",
        "Pods on the gpu pool need MTU 1400 because of the VXLAN overlay; 1500 drops large gRPC frames",
        "finding",
        tags=("network",),
        agent=GM,
        paraphrase="why do big RPC messages vanish on the accelerator nodes?",
        who="which agent found the packet size problem on the gpu nodes?",
    ),
    f(
        "helm-rule",
        "No new Helm charts: new services get Kustomize overlays",
        "decision",
        tags=("k8s",),
        who="which agent wrote down that new services use Kustomize?",
        agent=CX,
    ),
    f(
        "healthz",
        "Every service must expose /healthz (liveness) and /readyz (readiness) on the admin port 9090",
        "decision",
        tags=("k8s",),
        identifier="admin port 9090",
    ),
    f(
        "incident-42",
        "INC-0042 (2 Feb): the prod cluster lost DNS for 18 minutes after a CoreDNS config typo",
        "history",
        tags=("incident",),
        identifier="INC-0042",
        paraphrase="when did name resolution break in production and for how long?",
    ),
    f(
        "mirror",
        "Container images are mirrored to registry.internal:5000; pulls from Docker Hub are blocked",
        tags=("registry",),
        identifier="registry.internal:5000",
    ),
    f(
        "tf-owner",
        "Ravi Shah reviews every Terraform change to the network module",
        tags=("terraform",),
        who="who reviews changes to the network infrastructure code?",
    ),
    f(
        "ntp",
        "All hosts sync time from chrony against time.cloudflare.com; drift alerts at 100 ms",
        tags=("hosts",),
        paraphrase="where do our servers get their clock from?",
    ),
    f(
        "spot",
        "Batch jobs run on spot instances; anything with a deadline under an hour must use on-demand",
        "decision",
        tags=("cost",),
        paraphrase="when are we not allowed to use interruptible machines?",
    ),
)

CHAINS = (
    chain(
        "prom-retention",
        "how long does Prometheus keep metrics?",
        v("Prometheus retention is 15 days on the ops cluster", agent=CC),
        v("Prometheus retention cut to 7 days; long-term metrics go to Thanos", "supersede", agent=GM),
        tags=("monitoring",),
    ),
    chain(
        "k8s-version",
        "which Kubernetes version is the prod cluster on?",
        v("Prod cluster runs Kubernetes 1.28", agent=CX),
        v("Prod cluster upgraded to Kubernetes 1.29 last night, no incidents", "unmarked", agent=CX),
        v("Prod cluster is on Kubernetes 1.30 now", "unmarked", agent=GM),
        tags=("k8s",),
    ),
    chain(
        "pgbouncer-port",
        "what port do apps use to reach the staging database pooler?",
        v("PgBouncer for staging listens on 6432", agent=CC),
        v("Staging PgBouncer moved to port 6543 after the pooler rebuild", "supersede", agent=CC),
        tags=("postgres",),
    ),
    chain(
        "ci-cache",
        "where does the CI build cache live?",
        v("CI build cache is on the runners' local disks", agent=GM),
        v("CI cache moved to the S3 bucket acme-ci-cache (shared by all runners)", "unmarked", agent=CX),
        tags=("ci",),
    ),
    chain(
        "primary-region",
        "what is our primary cloud region?",
        v("Primary region is eu-west-1 (Ireland)", agent=CX),
        v(
            "Primary region is now eu-central-1 (Frankfurt) after the migration; eu-west-1 is the DR site",
            "supersede",
            agent=CC,
        ),
        type="decision",
    ),
    chain(
        "grafana-version",
        "what Grafana version are we running?",
        v("Grafana 10.2.3 on the ops cluster", agent=GM),
        v("Grafana upgraded to 10.4.1", "unmarked", agent=GM),
        tags=("monitoring",),
    ),
    chain(
        "log-shipper",
        "what ships the container logs?",
        v("Container logs are shipped by Fluent Bit as a DaemonSet", agent=CC),
        v("Switched log shipping from Fluent Bit to Vector; Fluent Bit DaemonSet deleted", "supersede", agent=CX),
        tags=("logs",),
    ),
    chain(
        "oncall-tool",
        "which tool pages the on-call engineer?",
        v("On-call paging goes through Opsgenie", agent=GM),
        v("We moved paging from Opsgenie to PagerDuty", "unmarked", agent=CC),
        tags=("oncall",),
    ),
)

HOPS = (
    hop("which host runs the session store, and what port does its TLS listener use?", "sessions-host", "redis-port"),
    hop("who manages the pager rotation for the team whose DNS outage was INC-0042?", "incident-42", "oncall-owner"),
    hop("what retention do we have for the backups the codex agent configured?", "backup-time", "pitr"),
    hop("which registry do the self-hosted runners pull images from?", "runner-labels", "mirror"),
    hop("who reviews changes to the module that defines the VPN subnet?", "vpn-subnet", "tf-owner"),
    hop("which machine type do the nodes with the MTU problem use?", "mtu", "node-pools"),
)

EXTRA = (
    f("sessions-host", "The storefront keeps user sessions in the Redis on cache-2", tags=("redis",)),
    f(
        "pitr",
        "pgBackRest also archives WAL, so point-in-time recovery covers the whole 14-day backup window",
        tags=("backup",),
    ),
    f("vpn-subnet", "The VPN subnet 10.80.0.0/16 is defined in the Terraform network module", tags=("terraform",)),
)

NOTES = (
    *notes(
        "finding",
        "etcd defrag on the staging cluster takes about 40 s and blocks API writes meanwhile",
        "The gpu pool scales up in 6-8 minutes; jobs that need a GPU right away should keep one warm",
        "Argo CD shows 'OutOfSync' for the cert-manager CRDs forever; it's the annotation diff, harmless",
        "node-exporter on the ARM runners reports wrong CPU frequency; ignore that panel",
        "Loki queries over 7 days time out unless they filter by namespace first",
    ),
    *notes(
        "action-item",
        "Rotate the Argo CD admin account to SSO-only before the audit",
        "Delete the unused NAT gateway in eu-west-1b (about 35 USD/month)",
        "Move the Grafana alert rules into git (currently edited in the UI)",
        "Ask Lena to add the data team to the secondary on-call",
    ),
    *notes(
        "fact",
        "The ops cluster hosts Grafana, Loki, Prometheus and Argo CD; nothing customer-facing runs there",
        "Staging is scaled down to zero replicas between 22:00 and 06:00 UTC",
        "All internal hostnames end in .internal and resolve only inside the VPC or over VPN",
        "Terraform is pinned to 1.7.x in .terraform-version",
    ),
)

HOSTS = ("app-1", "app-2", "app-3", "worker-1", "worker-2", "ops-1", "logs-1", "search-1", "queue-1", "media-1")
SERVICES = (
    ("node_exporter", 9100),
    ("cadvisor", 8081),
    ("Elasticsearch", 9200),
    ("RabbitMQ management", 15672),
    ("minio", 9000),
    ("Vault agent", 8200),
    ("jaeger collector", 14268),
    ("pgadmin", 5050),
    ("Kibana", 5601),
    ("Meilisearch", 7700),
    ("Mailpit", 8025),
    ("Traefik dashboard", 8088),
    ("Uptime Kuma", 3001),
    ("Loki", 3100),
    ("Tempo", 3200),
    ("blackbox_exporter", 9115),
    ("postgres_exporter", 9187),
    ("Consul", 8500),
    ("Keycloak (legacy)", 8180),
    ("Gitea mirror", 3000),
    ("Nexus", 8089),
    ("Redis Sentinel", 26379),
)
DNS = (
    ("status.example.net", "CNAME to the Atlassian Statuspage"),
    ("mail.example.net", "MX at Google Workspace"),
    ("cdn.example.net", "CNAME to the CloudFront distribution"),
    ("old.example.net", "301 to example.net, kept for old links"),
    ("api.example.net", "A records to the prod load balancer, TTL 60"),
    ("docs.example.net", "CNAME to the Read the Docs site"),
    ("sso.example.net", "CNAME to Okta's custom domain"),
    ("partners.example.net", "points at the legacy HAProxy pair"),
)
PHRASES = (
    "{host}.internal runs {svc} on port {port}",
    "{svc} is reachable at {host}.internal:{port}",
    "Opened port {port} on {host}.internal for {svc} (security group sg-{sg})",
    "{svc} on {host}.internal: port {port}, managed by systemd",
)


def fill(rng: Random) -> list[Fact]:
    """A host inventory: which service runs where, on which port."""
    out: list[Fact] = []
    hosts = list(HOSTS)
    rng.shuffle(hosts)
    for (svc, port), host in zip(SERVICES, hosts * 2, strict=False):
        text = rng.choice(PHRASES).format(host=host, svc=svc, port=port, sg=f"{rng.randrange(16**6):06x}")
        out.append(Fact(f"inv-{host}-{port}", text, "fact", ("inventory",)))
    for name, what in DNS:
        lead = rng.choice(("DNS: {n} is {w}", "{n}: {w}", "Checked DNS for {n} — {w}"))
        out.append(Fact(f"dns-{name}", lead.format(n=name, w=what), "fact", ("dns",)))
    return out


MORE_NOTES = (
    *notes(
        "finding",
        "CoreDNS cache hit rate is 92%; the misses are mostly *.amazonaws.com lookups",
        "A runaway cron on worker-2 filled /tmp with 40 GB of PDFs",
        "The staging cluster's autoscaler refuses to scale down because of pods with local storage",
        "HAProxy on the old edge nodes still gets 2% of traffic from a hardcoded partner IP",
        "Kernel 6.5 on the ARM runners fixes the random network drops we saw in CI",
        "Image pulls from the mirror take 40 s for the 3 GB ML images; consider pre-pulling",
    ),
    *notes(
        "decision",
        "All new buckets get versioning and a 90-day noncurrent-version expiry",
        "Production changes outside business hours need a second person on the call",
        "Base images come from our own distroless builds, rebuilt weekly",
        "CPU limits are not set on latency-critical services; requests only",
    ),
    *notes(
        "action-item",
        "Decommission app-3 once the last cron job moves to Kubernetes",
        "Write the runbook for restoring a single table from pgBackRest",
        "Renew the domain example.org before it auto-renews at the expensive registrar",
        "Check whether the gpu pool still needs the 2022 driver pin",
    ),
    *notes(
        "fact",
        "The prod cluster runs about 340 pods across 28 nodes",
        "Monthly cloud bill is around 48k EUR; compute is 61% of it",
        "There are three environments: dev (ephemeral), staging, prod",
        "The ops team's Slack channel is #infra, alerts go to #infra-alerts",
    ),
)

DOMAIN = Domain("infra", (CC, CX, GM), FACTS + EXTRA, CHAINS, HOPS, NOTES + MORE_NOTES, fill)
