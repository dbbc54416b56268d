"""The scrubber's corpora: secrets in many formats (generated) and ordinary lines (a file).

Every secret value is generated from a seeded RNG in the shape its provider uses, so
the values look real but are not credentials. A sample is (format, text, secrets): the
text as it would appear in a session and the substrings that must not survive.
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable
from pathlib import Path

BENIGN_FILE = Path(__file__).parent / "fixtures" / "scrub" / "benign.txt"
LOWER, UPPER, DIGITS = string.ascii_lowercase, string.ascii_uppercase, string.digits
ALNUM = LOWER + UPPER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"


class Gen:
    """Random building blocks for one sample."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def s(self, alphabet: str, n: int) -> str:
        """n characters of alphabet; alphanumeric bodies always mix cases and digits."""
        while True:
            out = "".join(self.rng.choice(alphabet) for _ in range(n))
            if (
                alphabet != ALNUM
                or n < 8
                or (any(c.isdigit() for c in out) and any(c.isupper() for c in out))
            ):
                return out

    def word(self) -> str:
        return self.rng.choice(
            ["alice", "deploy", "svc-ci", "admin", "app", "backup", "grafana", "ops", "dana"]
        )

    def password(self) -> str:
        """A human-ish strong password: letters, digits and a symbol."""
        base = self.rng.choice(["Tr0ub4dor", "Winter", "Blue", "Falcon", "Maple", "Qx"])
        return base + self.s(DIGITS, 3) + self.rng.choice("!#%&*+?@^~") + self.s(ALNUM, 5)

    def host(self) -> str:
        return self.rng.choice(["db.internal", "10.0.3.17", "prod-db-1.example.net", "cache"])


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _pem(g: Gen, label: str, lines: int = 8, sep: str = "\n") -> tuple[str, str]:
    body = sep.join(g.s(B64, 64) for _ in range(lines))
    return f"-----BEGIN {label}-----{sep}{body}{sep}-----END {label}-----", body


Sample = tuple[str, str, list[str]]
F = Callable[[Gen], tuple[str, list[str]]]


def _one(f: Callable[[Gen], tuple[str, str]]) -> F:
    def inner(g: Gen) -> tuple[str, list[str]]:
        text, secret = f(g)
        return text, [secret]

    return inner


def _pem_lines(g: Gen, label: str) -> tuple[str, list[str]]:
    text, body = _pem(g, label)
    return text, body.split("\n")


def _gcp_json(g: Gen) -> tuple[str, list[str]]:
    text, body = _pem(g, "PRIVATE KEY", 6)
    doc = {"type": "service_account", "project_id": "billing-prod", "private_key": text + "\n",
           "client_email": "ci@billing-prod.iam.gserviceaccount.com"}  # fmt: skip
    return json.dumps(doc), body.split("\n")


def _kube_key(g: Gen) -> tuple[str, list[str]]:
    text, _ = _pem(g, "RSA PRIVATE KEY", 4)
    data = _b64(text.encode())
    return f"    client-key-data: {data}", [data[20:60]]


def _docker(g: Gen) -> tuple[str, list[str]]:
    pw = g.password()
    auth = _b64(f"{g.word()}:{pw}".encode())
    return json.dumps({"auths": {"ghcr.io": {"auth": auth}}}), [auth]


def _putty(g: Gen) -> tuple[str, list[str]]:
    priv = [g.s(B64, 64) for _ in range(4)]
    text = "\n".join(
        ["PuTTY-User-Key-File-3: ssh-ed25519", "Encryption: none", "Comment: dana@laptop",
         "Public-Lines: 2", g.s(B64, 64), g.s(B64, 20), "Private-Lines: 4", *priv,
         "Private-MAC: " + g.s(HEX, 64)]
    )  # fmt: skip
    return text, priv


def _azure_conn(g: Gen) -> tuple[str, list[str]]:
    key = g.s(B64, 86) + "=="
    return (
        f"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=billingprod;"
        f"AccountKey={key};EndpointSuffix=core.windows.net",
        [key],
    )


def _shadow(g: Gen) -> tuple[str, str]:
    h = f"$6${g.s(ALNUM, 16)}${g.s(ALNUM + './', 86)}"
    return f"root:{h}:19800:0:99999:7:::", h


FORMATS: dict[str, F] = {
    # provider token formats
    "aws-access-key-id": _one(lambda g: (f"AWS_ACCESS_KEY_ID={(k := 'AKIA' + g.s(UPPER + '234567', 16))}", k)),  # noqa: E501
    "aws-access-key-prose": _one(lambda g: (f"the CI user's key is {(k := 'AKIA' + g.s(UPPER + '234567', 16))} (rotated)", k)),  # noqa: E501
    "aws-secret-access-key": _one(lambda g: (f"aws_secret_access_key = {(k := g.s(B64, 40))}", k)),
    "aws-session-token": _one(lambda g: (f"aws_session_token = {(k := 'IQoJb3JpZ2luX2VjE' + g.s(B64, 300))}", k)),  # noqa: E501
    "github-classic-pat": _one(lambda g: (f"git remote set-url origin x && echo {(k := 'ghp_' + g.s(ALNUM, 36))}", k)),  # noqa: E501
    "github-oauth": _one(lambda g: (f"oauth: {(k := 'gho_' + g.s(ALNUM, 36))}", k)),
    "github-fine-grained": _one(lambda g: (f"token {(k := 'github_pat_' + g.s(ALNUM, 22) + '_' + g.s(ALNUM, 59))}", k)),  # noqa: E501
    "github-app": _one(lambda g: (f"installation token ghs_{(k := g.s(ALNUM, 36))}", k)),
    "gitlab-pat": _one(lambda g: (f"glab auth login -t {(k := 'glpat-' + g.s(URLSAFE, 20))}", k)),
    "slack-bot": _one(lambda g: (f"SLACK_BOT={(k := 'xoxb-' + g.s(DIGITS, 12) + '-' + g.s(DIGITS, 13) + '-' + g.s(ALNUM, 24))}", k)),  # noqa: E501
    "slack-user": _one(lambda g: (f"using {(k := 'xoxp-' + g.s(DIGITS, 12) + '-' + g.s(DIGITS, 12) + '-' + g.s(DIGITS, 13) + '-' + g.s(HEX, 32))}", k)),  # noqa: E501
    "slack-webhook": _one(lambda g: (f"curl -X POST {(k := 'https://hooks.slack.com/services/T' + g.s(UPPER + DIGITS, 8) + '/B' + g.s(UPPER + DIGITS, 10) + '/' + g.s(ALNUM, 24))}", k)),  # noqa: E501
    "stripe-live-secret": _one(lambda g: (f"stripe.api_key = '{(k := 'sk_live_' + g.s(ALNUM, 99))}'", k)),  # noqa: E501
    "stripe-restricted": _one(lambda g: (f"key {(k := 'rk_live_' + g.s(ALNUM, 24))} works", k)),
    "stripe-webhook": _one(lambda g: (f"endpoint secret is {(k := 'whsec_' + g.s(ALNUM, 32))}", k)),  # noqa: E501
    "openai-project": _one(lambda g: (f"client = OpenAI(api_key=\"{(k := 'sk-proj-' + g.s(URLSAFE, 120))}\")", k)),  # noqa: E501
    "anthropic": _one(lambda g: (f"x-api-key: {(k := 'sk-ant-api03-' + g.s(URLSAFE, 93) + 'AA')}", k)),  # noqa: E501
    "google-api-key": _one(lambda g: (f"https://maps.googleapis.com/maps/api/geocode/json?address=x&key={(k := 'AIza' + g.s(URLSAFE, 35))}", k)),  # noqa: E501
    "google-oauth-client-secret": _one(lambda g: (f"client secret {(k := 'GOCSPX-' + g.s(URLSAFE, 28))}", k)),  # noqa: E501
    "google-refresh-token": _one(lambda g: (f"refresh_token=1//{(k := '0g' + g.s(URLSAFE, 100))}", k)),  # noqa: E501
    "gcp-service-account-json": _gcp_json,
    "twilio-api-key": _one(lambda g: (f"Twilio key {(k := 'SK' + g.s(HEX, 32))}", k)),
    "twilio-auth-token": _one(lambda g: (f"TWILIO_AUTH_TOKEN={(k := g.s(HEX, 32))}", k)),
    "sendgrid": _one(lambda g: (f"SENDGRID={(k := 'SG.' + g.s(URLSAFE, 22) + '.' + g.s(URLSAFE, 43))}", k)),  # noqa: E501
    "mailgun": _one(lambda g: (f"mailgun api: {(k := 'key-' + g.s(HEX, 32))}", k)),
    "npm-token": _one(lambda g: (f"//registry.npmjs.org/:_authToken={(k := 'npm_' + g.s(ALNUM, 36))}", k)),  # noqa: E501
    "pypi-token": _one(lambda g: (f"password = {(k := 'pypi-AgEIcHlwaS5vcmc' + g.s(URLSAFE, 70))}", k)),  # noqa: E501
    "huggingface": _one(lambda g: (f"huggingface-cli login --token {(k := 'hf_' + g.s(ALNUM, 34))}", k)),  # noqa: E501
    "digitalocean": _one(lambda g: (f"doctl auth init -t {(k := 'dop_v1_' + g.s(HEX, 64))}", k)),  # noqa: E501
    "heroku-api-key": _one(lambda g: (f"HEROKU_API_KEY={(k := g.s(HEX, 8) + '-' + g.s(HEX, 4) + '-4' + g.s(HEX, 3) + '-a' + g.s(HEX, 3) + '-' + g.s(HEX, 12))}", k)),  # noqa: E501
    "shopify-access": _one(lambda g: (f"X-Shopify-Access-Token: {(k := 'shpat_' + g.s(HEX, 32))}", k)),  # noqa: E501
    "discord-bot": _one(lambda g: (f"DISCORD_TOKEN={(k := 'MT' + g.s(ALNUM, 24) + '.' + g.s(URLSAFE, 6) + '.' + g.s(URLSAFE, 38))}", k)),  # noqa: E501
    "telegram-bot": _one(lambda g: (f"telegram bot token: {(k := g.s(DIGITS, 10) + ':AA' + g.s(URLSAFE, 33))}", k)),  # noqa: E501
    "jwt": _one(lambda g: (f"cookie id_token={(k := 'eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJ' + g.s(URLSAFE, 80) + '.' + g.s(URLSAFE, 86))}", k)),  # noqa: E501
    "azure-storage-connection": _azure_conn,
    "azure-client-secret": _one(lambda g: (f"AZURE_CLIENT_SECRET={(k := g.s(ALNUM, 3) + '8Q~' + g.s(ALNUM + '_~.-', 34))}", k)),  # noqa: E501
    "databricks": _one(lambda g: (f"databricks configure --token {(k := 'dapi' + g.s(HEX, 32))}", k)),  # noqa: E501
    "datadog-api-key": _one(lambda g: (f"DD_API_KEY={(k := g.s(HEX, 32))}", k)),
    "newrelic-user-key": _one(lambda g: (f"newrelic key {(k := 'NRAK-' + g.s(UPPER + DIGITS, 27))}", k)),  # noqa: E501
    "sentry-dsn": _one(lambda g: (f"SENTRY_DSN=https://{(k := g.s(HEX, 32))}@o{g.s(DIGITS, 6)}.ingest.sentry.io/{g.s(DIGITS, 7)}", k)),  # noqa: E501
    "linear": _one(lambda g: (f"LINEAR={(k := 'lin_api_' + g.s(ALNUM, 40))}", k)),
    "notion": _one(lambda g: (f"notion integration {(k := 'ntn_' + g.s(DIGITS, 11) + g.s(ALNUM, 35))}", k)),  # noqa: E501
    "postman": _one(lambda g: (f"postman {(k := 'PMAK-' + g.s(HEX, 24) + '-' + g.s(HEX, 34))}", k)),  # noqa: E501
    "doppler": _one(lambda g: (f"DOPPLER_TOKEN={(k := 'dp.pt.' + g.s(ALNUM, 43))}", k)),
    "vault-token": _one(lambda g: (f"vault login {(k := 'hvs.' + g.s(URLSAFE, 90))}", k)),
    "terraform-cloud": _one(lambda g: (f'credentials "app.terraform.io" {{ token = "{(k := g.s(ALNUM, 14) + ".atlasv1." + g.s(URLSAFE, 67))}" }}', k)),  # noqa: E501
    "pulumi": _one(lambda g: (f"pulumi login with {(k := 'pul-' + g.s(HEX, 40))}", k)),
    "grafana-service-account": _one(lambda g: (f"grafana {(k := 'glsa_' + g.s(ALNUM, 32) + '_' + g.s(HEX, 8))}", k)),  # noqa: E501
    "okta-ssws": _one(lambda g: (f"Authorization: SSWS {(k := '00' + g.s(URLSAFE, 40))}", k)),
    "atlassian": _one(lambda g: (f"JIRA_API_TOKEN={(k := 'ATATT3xFfGF0' + g.s(URLSAFE, 180))}", k)),  # noqa: E501
    "square": _one(lambda g: (f"square access token {(k := 'EAAA' + g.s(URLSAFE, 60))}", k)),
    "mapbox-secret": _one(lambda g: (f"MAPBOX={(k := 'sk.eyJ1Ijoi' + g.s(ALNUM, 40) + '.' + g.s(URLSAFE, 22))}", k)),  # noqa: E501
    "age-secret-key": _one(lambda g: (f"# created: 2026-01-02\n{(k := 'AGE-SECRET-KEY-1' + g.s(UPPER + DIGITS, 58))}", k)),  # noqa: E501
    "cloudflare-api-token": _one(lambda g: (f"CLOUDFLARE_API_TOKEN={(k := g.s(URLSAFE, 40))}", k)),  # noqa: E501
    # private key blocks, every framing
    "pem-rsa": lambda g: _pem_lines(g, "RSA PRIVATE KEY"),
    "pem-openssh": lambda g: _pem_lines(g, "OPENSSH PRIVATE KEY"),
    "pem-ec-json-escaped": lambda g: (
        (t := _pem(g, "EC PRIVATE KEY", 3, "\\n"))[0], t[1].split("\\n")),
    "pem-pkcs8-encrypted": lambda g: _pem_lines(g, "ENCRYPTED PRIVATE KEY"),
    "pgp-private-block": lambda g: _pem_lines(g, "PGP PRIVATE KEY BLOCK"),
    "pem-dsa-truncated": lambda g: (
        "-----BEGIN DSA PRIVATE KEY-----\n" + "\n".join(b := [g.s(B64, 64) for _ in range(3)]), b),  # noqa: E501
    "putty-private-key": _putty,
    "kubeconfig-client-key-data": _kube_key,
    "wireguard-private-key": _one(lambda g: (f"[Interface]\nPrivateKey = {(k := g.s(B64, 43) + '=')}", k)),  # noqa: E501
    # config files and auth fields
    "docker-config-auth": _docker,
    "kubeconfig-token": _one(lambda g: (f"users:\n- name: ci\n  user:\n    token: {(k := g.s(URLSAFE, 54))}", k)),  # noqa: E501
    "netrc": _one(lambda g: (f"machine api.heroku.com login dana@example.com password {(k := g.s(HEX, 8) + '-' + g.s(HEX, 4) + '-' + g.s(HEX, 4))}", k)),  # noqa: E501
    "netrc-multiline": _one(lambda g: (f"machine git.example.com\n  login ci\n  password {(k := g.password())}", k)),  # noqa: E501
    "pgpass": _one(lambda g: (f"localhost:5432:billing:{g.word()}:{(k := g.password())}", k)),
    "htpasswd": _one(lambda g: (f"{g.word()}:{(k := '$apr1$' + g.s(ALNUM, 8) + '$' + g.s(ALNUM + './', 22))}", k)),  # noqa: E501
    "shadow": _one(_shadow),
    "env-password": _one(lambda g: (f"DB_PASSWORD={(k := g.password())}", k)),
    "env-secret-key": _one(lambda g: (f"SECRET_KEY='{(k := g.s(ALNUM + '!@#%^&*(-_=+)', 50))}'", k)),  # noqa: E501
    "export-token": _one(lambda g: (f"export GITHUB_TOKEN=\"{(k := g.s(ALNUM, 40))}\"", k)),
    "pgpassword-prefix": _one(lambda g: (f"PGPASSWORD={(k := g.password())} psql -h {g.host()} -U app billing", k)),  # noqa: E501
    "powershell-env": _one(lambda g: (f"$env:API_TOKEN = \"{(k := g.s(ALNUM, 32))}\"", k)),
    "yaml-password": _one(lambda g: (f"database:\n  user: app\n  password: {(k := g.password())}", k)),  # noqa: E501
    "yaml-quoted-secret": _one(lambda g: (f"  client_secret: \"{(k := g.s(URLSAFE, 40))}\"", k)),
    "json-client-secret": _one(lambda g: (json.dumps({"client_id": "web", "client_secret": (k := g.s(ALNUM, 32))}), k)),  # noqa: E501
    "json-password-tool-output": _one(lambda g: (json.dumps({"user": "admin", "password": (k := g.password())}), k)),  # noqa: E501
    "ini-password": _one(lambda g: (f"[client]\nuser = root\npassword = {(k := g.password())}", k)),  # noqa: E501
    "toml-token": _one(lambda g: (f"[registries.internal]\ntoken = \"{(k := g.s(ALNUM, 32))}\"", k)),  # noqa: E501
    "xml-password": _one(lambda g: (f"<server><id>nexus</id><username>ci</username><password>{(k := g.password())}</password></server>", k)),  # noqa: E501
    "java-properties": _one(lambda g: (f"spring.datasource.password={(k := g.password())}", k)),
    "connection-string": _one(lambda g: (f"Server={g.host()};Database=billing;User Id=sa;Password={(k := g.password())};", k)),  # noqa: E501
    "django-secret-key": _one(lambda g: (f"SECRET_KEY = 'django-insecure-{(k := g.s(LOWER + DIGITS + '!@#$%^&*(-_=+)', 50))}'", k)),  # noqa: E501
    "rails-secret-key-base": _one(lambda g: (f"secret_key_base: {(k := g.s(HEX, 128))}", k)),
    "go-struct-password": _one(lambda g: (f'cfg := Config{{User: "app", Password: "{(k := g.password())}"}}', k)),  # noqa: E501
    "python-kwarg": _one(lambda g: (f'psycopg.connect(host="{g.host()}", password="{(k := g.password())}")', k)),  # noqa: E501
    "js-object-apikey": _one(lambda g: (f'const client = new Client({{ apiKey: "{(k := g.s(ALNUM, 32))}" }});', k)),  # noqa: E501
    "sql-identified-by": _one(lambda g: (f"CREATE USER 'app'@'%' IDENTIFIED BY '{(k := g.password())}';", k)),  # noqa: E501
    # credentials in URLs, any scheme
    "url-postgres": _one(lambda g: (f"DATABASE_URL=postgres://app:{(k := g.password().replace('@', '9'))}@{g.host()}:5432/billing", k)),  # noqa: E501
    "url-redis-empty-user": _one(lambda g: (f"redis://:{(k := g.s(ALNUM, 24))}@{g.host()}:6379/0", k)),  # noqa: E501
    "url-mongodb-srv": _one(lambda g: (f"mongodb+srv://{g.word()}:{(k := g.s(ALNUM, 16))}@cluster0.ab1cd.mongodb.net/test", k)),  # noqa: E501
    "url-https-basic": _one(lambda g: (f"pip install --index-url https://{g.word()}:{(k := g.s(ALNUM, 20))}@pypi.internal/simple pkg", k)),  # noqa: E501
    "url-amqp": _one(lambda g: (f"CELERY_BROKER_URL='amqp://{g.word()}:{(k := g.s(ALNUM, 18))}@rabbit:5672//'", k)),  # noqa: E501
    "discord-webhook": _one(lambda g: (f"curl -X POST https://discord.com/api/webhooks/{g.s(DIGITS, 18)}/{(k := g.s(URLSAFE, 68))}", k)),  # noqa: E501
    "git-credentials": _one(lambda g: (f"https://x-access-token:{(k := g.s(ALNUM, 40))}@github.com", k)),  # noqa: E501
    "url-query-token": _one(lambda g: (f"GET /v1/export?format=csv&access_token={(k := g.s(ALNUM, 40))} HTTP/1.1", k)),  # noqa: E501
    # CLI password flags
    "mysql-attached-p": _one(lambda g: (f"mysql -u root -p{(k := g.password())} billing < dump.sql", k)),  # noqa: E501
    "mysqldump-attached-p": _one(lambda g: (f"mysqldump -h {g.host()} -uroot -p'{(k := g.password())}' --all-databases", k)),  # noqa: E501
    "curl-user": _one(lambda g: (f"curl -u {g.word()}:{(k := g.password())} https://api.example.com/v1/me", k)),  # noqa: E501
    "curl-user-quoted": _one(lambda g: (f"curl --user '{g.word()}:{(k := g.s(ALNUM, 22))}' https://x.example.com", k)),  # noqa: E501
    "flag-password": _one(lambda g: (f"psql-wrapper --host {g.host()} --password {(k := g.password())}", k)),  # noqa: E501
    "flag-password-equals": _one(lambda g: (f"./manage.py createsuperuser --password={(k := g.password())}", k)),  # noqa: E501
    "flag-token": _one(lambda g: (f"codecov upload --token {(k := g.s(HEX, 8) + '-' + g.s(HEX, 4) + '-' + g.s(HEX, 4))}", k)),  # noqa: E501
    "flag-api-key": _one(lambda g: (f"algolia --api-key {(k := g.s(HEX, 32))} --app-id X1Y2", k)),  # noqa: E501
    "sshpass": _one(lambda g: (f"sshpass -p '{(k := g.password())}' ssh deploy@{g.host()}", k)),  # noqa: E501
    "docker-login-p": _one(lambda g: (f"docker login -u ci -p {(k := g.s(ALNUM, 24))} registry.example.com", k)),  # noqa: E501
    "redis-cli-a": _one(lambda g: (f"redis-cli -h {g.host()} -a {(k := g.s(ALNUM, 24))} ping", k)),  # noqa: E501
    "openssl-passin": _one(lambda g: (f"openssl rsa -in key.pem -passin pass:{(k := g.password())} -out plain.pem", k)),  # noqa: E501
    "keytool-storepass": _one(lambda g: (f"keytool -list -keystore app.jks -storepass {(k := g.password())}", k)),  # noqa: E501
    # headers
    "authorization-basic": _one(lambda g: (f"Authorization: Basic {(k := _b64((g.word() + ':' + g.password()).encode()))}", k)),  # noqa: E501
    "authorization-bearer": _one(lambda g: (f"curl -H \"Authorization: Bearer {(k := g.s(URLSAFE, 48))}\" https://api", k)),  # noqa: E501
    "x-api-key-header": _one(lambda g: (f"-H 'X-API-Key: {(k := g.s(ALNUM, 32))}'", k)),
    "cookie-session": _one(lambda g: (f"Cookie: session={(k := g.s(URLSAFE, 43))}; theme=dark", k)),  # noqa: E501
    # high entropy in assignment positions under neutral keys
    "json-neutral-high-entropy": _one(lambda g: (json.dumps({"name": "billing", "value": (k := g.s(ALNUM, 40))}), k)),  # noqa: E501
    "yaml-neutral-high-entropy": _one(lambda g: (f"webhook:\n  signing: {(k := g.s(URLSAFE, 32))}", k)),  # noqa: E501
    "env-neutral-high-entropy": _one(lambda g: (f"MEILI_MASTER={(k := g.s(ALNUM, 32))}", k)),
    # short secrets where the context says secret, whatever the length (issue: short secrets)
    "short-yaml-password": _one(lambda g: (f"password: {(k := g.rng.choice(['hunter2', 'abc', 'pw1']))}", k)),  # noqa: E501
    "short-env-password": _one(lambda g: (f"PGPASSWORD={(k := g.s(ALNUM, 2))} psql -h {g.host()} -U app", k)),  # noqa: E501
    "short-export-quoted": _one(lambda g: (f"export DB_PASS='{(k := g.s(ALNUM, 2) + '!k')}'", k)),
    "short-json-password": _one(lambda g: (json.dumps({"user": "app", "password": (k := g.s(LOWER, 2))}), k)),  # noqa: E501
    "short-mysql-p": _one(lambda g: (f"mysql -u root -p{(k := g.s(ALNUM, 2))} billing", k)),
    "short-sshpass": _one(lambda g: (f"sshpass -p {(k := g.s(LOWER, 2))} ssh deploy@{g.host()}", k)),  # noqa: E501
    "short-url-password": _one(lambda g: (f"postgres://{g.word()}:{(k := g.s(LOWER, 2))}@{g.host()}/db", k)),  # noqa: E501
    "short-basic-auth": _one(lambda g: (f"Authorization: Basic {(k := _b64(f'{g.s(LOWER, 1)}:{g.s(LOWER, 1)}'.encode()))}", k)),  # noqa: E501
    "prose-password-word-digit": _one(lambda g: (f"the password is {(k := g.rng.choice(['hunter', 'dragon', 'monkey']) + g.s(DIGITS, 1))}", k)),  # noqa: E501
    "yaml-password-capitalised": _one(lambda g: (f"  password: {(k := 'Password' + g.s(DIGITS, 3))}", k)),  # noqa: E501
    # PINs and a lock's codes: digits only, after a word that says so
    "pin-prose": _one(lambda g: (f"the PIN is {(k := g.s(DIGITS, 4))}", k)),
    "door-code": _one(lambda g: (f"{g.rng.choice(['door', 'gate', 'alarm', 'keypad'])} code: {(k := g.s(DIGITS, 6))}", k)),  # noqa: E501
    "passcode-bare": _one(lambda g: (f"the phone's passcode {(k := g.s(DIGITS, 6))} unlocks it", k)),  # noqa: E501
    "azure-sas-sig": _one(lambda g: (f"https://acct.blob.core.windows.net/c/f?sv=2022-11-02&se=2026-01-01&sp=r&sig={(k := g.s(ALNUM, 43) + '%3D')}", k)),  # noqa: E501
}  # fmt: skip


def _wrap(rng: random.Random, text: str) -> str:
    """Put a secret where sessions carry it: a message, a tool result, a JSON string."""
    style = rng.randrange(4)
    if style == 0:
        return text
    if style == 1:
        return f"Here is what I found in the config:\n\n```\n{text}\n```\nShall I rotate it?"
    if style == 2:
        return json.dumps({"stdout": f"$ cat settings\n{text}\n", "exit_code": 0})
    return f"[tool output] {text} [exit 0]"


def secret_samples(per_format: int = 5, seed: int = 1913) -> list[tuple[str, str, list[str]]]:
    """(format, text, secrets) for every format, per_format samples each."""
    out = []
    for name, make in FORMATS.items():
        for i in range(per_format):
            rng = random.Random(f"{seed}:{name}:{i}")
            text, secrets = make(Gen(rng))
            out.append((name, _wrap(rng, text), [s for s in secrets if s]))
    return out


def benign_lines() -> list[str]:
    """The ordinary lines: code, config, lockfiles, logs and prose (comments skipped)."""
    lines = BENIGN_FILE.read_text(encoding="utf-8").splitlines()
    return [ln for ln in lines if ln.strip() and not ln.startswith("#=")]


def measure(scrub: Callable[[str], str]) -> dict[str, object]:
    """Recall on the secret corpus and the share of benign lines left untouched."""
    samples = secret_samples()
    missed = []
    for name, text, secrets in samples:
        out = scrub(text)
        # json.dumps escapes some characters: look for the secret as the text carries it
        if any(s in out or json.dumps(s)[1:-1] in out for s in secrets):
            missed.append(name)
    benign = benign_lines()
    changed = [ln for ln in benign if scrub(ln) != ln]
    return {
        "formats": len(FORMATS),
        "samples": len(samples),
        "recall": 1 - len(missed) / len(samples),
        "missed": sorted(set(missed)),
        "benign_lines": len(benign),
        "benign_intact": 1 - len(changed) / len(benign),
        "changed": changed,
    }
