/**
 * Secrets that must never reach a handoff, as data. The token families follow the rules secret
 * scanners publish, chiefly gitleaks' default rules (`config/gitleaks.toml` in
 * github.com/gitleaks/gitleaks, commit 009e025; rule ids are given with each pattern), narrowed
 * to what a transcript holds and rewritten for JavaScript's backtracking engine.
 *
 * Every pattern is linear, by construction:
 * - a token starts only where a run of the characters it is made of starts (a lookbehind), so the
 *   engine tries one start per run, never one at every character of a run (`-eyJ-eyJ-eyJ…` once
 *   tried the JWT pattern's 4000 steps at every `eyJ`);
 * - after its fixed prefix, each part is a bounded run of one class, and a class is never next to
 *   one that overlaps it, so what a run takes is never handed back and forth;
 * - what must be found in context (a URL's password, `mysql … -pPW`) is found by code that looks
 *   at each stretch of text once.
 * {@linkcode redact} is only ever given bounded text besides. `tests/pattern_budget_test.ts` runs
 * each pattern here on 1 MB of adversarial text.
 *
 * @module
 */

/** What replaces a secret. */
export const REDACTED = "[redacted]";

/** A token starts here only when not glued to a letter or digit before it (`_` and `-` may be). */
const START = "(?<![A-Za-z0-9])";
/** A token made of `[A-Za-z0-9_-]` starts only where a run of those starts. */
const RUN_START = "(?<![A-Za-z0-9_-])";
/** A token of fixed length ends where the run does. */
const END = "(?![A-Za-z0-9])";

function token(id: string, body: string, start = START): { id: string; pattern: RegExp } {
  return { id, pattern: new RegExp(start + body, "g") };
}

/** Credentials recognisable by their own shape, wherever they appear. */
export const TOKEN_PATTERNS: readonly { id: string; pattern: RegExp }[] = [
  // anthropic-api-key, anthropic-admin-api-key; openai-api-key (sk-proj-, sk-svcacct-, sk-)
  token("anthropic-api-key", "sk-ant-[A-Za-z0-9_-]{8,200}"),
  token("openai-api-key", "sk-[A-Za-z0-9_-]{16,200}"),
  // aws-access-token
  token("aws-access-token", `(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}${END}`),
  // github-pat, github-oauth, github-app-token, github-refresh-token, github-fine-grained-pat
  token("github-token", "gh[pousr]_[A-Za-z0-9]{20,255}"),
  token("github-fine-grained-pat", "github_pat_[A-Za-z0-9_]{20,255}"),
  // gitlab-pat, gitlab-runner-authentication-token and the other glXX- tokens
  token("gitlab-token", "gl(?:pat|ptt|dt|rt|cbt|oas|imt|ft|agent|soat)-[A-Za-z0-9_-]{20,255}"),
  // npm-access-token
  token("npm-access-token", `npm_[A-Za-z0-9]{36}${END}`),
  // pypi-upload-token
  token("pypi-upload-token", "pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,400}"),
  // slack-bot-token, slack-user-token, slack-app-token, slack-config-access-token …
  token("slack-token", "xox[abeoprs]-[A-Za-z0-9-]{8,255}"),
  token("slack-app-token", "xapp-\\d-[A-Za-z0-9-]{8,255}"),
  // stripe-access-token; a webhook's signing secret
  token("stripe-access-token", "(?:sk|rk)_(?:test|live|prod)_[A-Za-z0-9]{10,99}"),
  token("stripe-webhook-secret", "whsec_[A-Za-z0-9]{24,99}"),
  // gcp-api-key; Google OAuth access tokens and client secrets
  token("gcp-api-key", "AIza[A-Za-z0-9_-]{35}"),
  token("google-oauth-access-token", "ya29\\.[A-Za-z0-9_-]{20,2000}"),
  token("google-oauth-client-secret", "GOCSPX-[A-Za-z0-9_-]{20,60}"),
  // huggingface-access-token
  token("huggingface-access-token", `hf_[A-Za-z]{34}${END}`),
  // sendgrid-api-token
  token("sendgrid-api-token", "SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}"),
  // digitalocean-pat, digitalocean-access-token, digitalocean-refresh-token
  token("digitalocean-token", "do[por]_v1_[a-f0-9]{64}"),
  // shopify-access-token, shopify-custom-access-token, shopify-private-app-access-token
  token("shopify-token", "shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
  // databricks-api-token
  token("databricks-api-token", "dapi[a-f0-9]{32}"),
  // vault-service-token, vault-batch-token (and recovery tokens)
  token("vault-token", "hv[sbr]\\.[A-Za-z0-9_-]{24,500}", RUN_START),
  // twilio-api-key; mailgun-private-api-token
  token("twilio-api-key", `SK[0-9a-fA-F]{32}${END}`),
  token("mailgun-private-api-token", `key-[a-f0-9]{32}${END}`),
  // telegram-bot-api-token: <bot id>:<secret>, also inside a bot URL (`/bot123…:AA…`)
  token("telegram-bot-api-token", "[0-9]{5,16}:A[A-Za-z0-9_-]{30,40}", "(?<![0-9])"),
  // discord bot tokens: <base64 user id>.<timestamp>.<hmac>
  token(
    "discord-bot-token",
    "[MNO][A-Za-z0-9_-]{23,27}\\.[A-Za-z0-9_-]{6}\\.[A-Za-z0-9_-]{27,40}",
    RUN_START,
  ),
  // doppler-api-token (personal, service, CLI, SCIM, audit)
  token("doppler-api-token", "dp\\.(?:pt|st|ct|sa|scim|audit)\\.[A-Za-z0-9]{40,60}"),
  // linear-api-key
  token("linear-api-key", `lin_api_[A-Za-z0-9]{40}${END}`),
  // grafana-service-account-token, grafana-cloud-api-token
  token("grafana-service-account-token", "glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
  token("grafana-cloud-api-token", "glc_[A-Za-z0-9+/]{32,400}={0,2}"),
  // postman-api-token
  token("postman-api-token", "PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
  // atlassian-api-token
  token("atlassian-api-token", "ATATT3[A-Za-z0-9_=-]{20,400}"),
  // heroku-api-key-v2
  token("heroku-api-key", "HRKU-[A-Za-z0-9_-]{20,100}"),
  // sentry-org-token, sentry-user-token
  token("sentry-token", "sntry[su]_[A-Za-z0-9+/=_-]{20,400}"),
  // groq-api-key; replicate api tokens
  token("groq-api-key", "gsk_[A-Za-z0-9]{40,60}"),
  token("replicate-api-token", "r8_[A-Za-z0-9]{30,50}"),
  // 1password-service-account-token
  token("1password-service-account-token", "ops_eyJ[A-Za-z0-9+/=_-]{20,2000}"),
  // age-secret-key
  token("age-secret-key", "AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{50,70}"),
  // jwt: starts only where a run of its own characters starts (see the module's note)
  token(
    "jwt",
    "eyJ[A-Za-z0-9_-]{8,4000}\\.eyJ[A-Za-z0-9_-]{8,8000}\\.[A-Za-z0-9_-]{8,4000}",
    RUN_START,
  ),
  // curl-auth-header: a bearer token, even without its header
  token("bearer-token", "Bearer[ \\t]{1,5}[A-Za-z0-9._~+/=-]{8,4000}", "\\b"),
];

/**
 * Credentials given to a name or an option that says what they are: the group named `keep` is
 * kept, the one named `secret` replaced. Each pattern's own comment says what it is for. A run of
 * name characters before a separator is taken whole (`(?=(?<run>…))\k<run>`, an atomic group):
 * giving characters back could never make the separator match, and would cost a step each.
 */
export const VALUE_PATTERNS: readonly { id: string; pattern: RegExp }[] = [
  {
    // `Authorization: <scheme> <credentials>` (and Proxy-Authorization).
    id: "authorization-header",
    pattern:
      /(?<keep>authorization["']?[ \t]{0,5}[=:][ \t]{0,5}["']?(?:(?:Bearer|Basic|Token|Digest|Negotiate)[ \t]{1,5})?)(?<secret>[^\s"'`,;]{1,4000})/gi,
  },
  {
    // `Cookie:` and `Set-Cookie:` headers: the rest of the line is session state.
    id: "cookie-header",
    pattern:
      /(?<keep>(?<![\w-])(?:set-)?cookie["']?[ \t]{0,5}:[ \t]{0,5})(?<secret>[^\n"'`]{1,4000})/gi,
  },
  {
    // A password given as a YAML or header value runs to the end of its line (it may hold
    // spaces: `password: correct horse battery staple`).
    id: "password-line",
    pattern:
      /(?<keep>(?:passw(?:or)?d|passphrase)(?=(?<run>[\w.-]{0,24}))\k<run>["']?[ \t]{0,5}:[ \t]{1,5})(?<secret>[^\s"'`][^\n"'`]{0,1000})/gi,
  },
  {
    // The docker config's `"auth": "<base64 of user:password>"`.
    id: "docker-config-auth",
    pattern: /(?<keep>"auth"[ \t]{0,5}:[ \t]{0,5}")(?<secret>[A-Za-z0-9+/=]{8,4000})/g,
  },
  {
    // `--password PW` and the like (`--password=PW` is an assignment, below).
    id: "secret-option",
    pattern:
      /(?<keep>(?<![\w-])--(?:password|passwd|pass|secret|token|api-key|apikey|access-token|auth-token|client-secret|secret-key|private-key|aws-secret-access-key|aws-session-token|db-password|admin-password)[ \t]{1,5})(?<secret>[^\s'"`-][^\s'"`]{0,500})/gi,
  },
  {
    // `curl -u user:password`, `--user user:password`: the password.
    id: "user-option",
    pattern:
      /(?<keep>(?<![\w-])(?:-u|--user)[ \t]{1,5}[^\s:'"`/]{1,200}:)(?<secret>[^\s'"`]{1,500})/g,
  },
  {
    // `aws configure set aws_secret_access_key KEY` and other space-separated AWS secrets.
    id: "aws-secret-key-word",
    pattern:
      /(?<keep>(?<![a-z0-9])aws_(?:secret_access_key|session_token)["']?[ \t]{1,5})(?<secret>[^\s"'`]{8,500})/gi,
  },
  {
    // A `.netrc` line: `machine HOST login USER password PW`.
    id: "netrc-password",
    pattern:
      /(?<keep>\bmachine[ \t]{1,5}\S{1,253}[ \t]{1,5}login[ \t]{1,5}\S{1,200}[ \t]{1,5}password[ \t]{1,5})(?<secret>\S{1,500})/g,
  },
  {
    // A `.pgpass` line: `host:port:database:user:password`.
    id: "pgpass-line",
    pattern:
      /(?<keep>(?<!\S)[^\s:]{1,253}:(?:\d{1,5}|\*):[^\s:]{1,63}:[^\s:]{1,63}:)(?<secret>[^\s:]{1,500})(?!\S)/g,
  },
  {
    // An environment-style name ending in what it holds: `APP_KEY=`, `SMTP_PASS=`, `ENC_SECRET:`.
    id: "env-secret-name",
    pattern:
      /(?<keep>(?<![A-Za-z0-9_])[A-Z][A-Z0-9_]{0,60}_(?:KEY|PASS|PWD|SECRET|TOKEN)(?:_[A-Z0-9]{1,20})?["']?[ \t]{0,5}[=:][ \t]{0,5})(?<secret>"(?:[^"\\\n]|\\.){0,1000}"|'[^'\n]{0,1000}'|[^\s"'`,;&)]{1,1000})/g,
  },
];

/**
 * A value given to a key that names a credential: `password=…`, `DB_PASSWORD=…`, `MY_API_KEY: …`,
 * `AWS_SECRET_ACCESS_KEY=…`, `"password": "…"` (escaped quotes and all), `AccountKey=…` (Azure).
 * The key word may sit inside a longer name (no `\b`: `_` is a word character, so `\bPASSWORD`
 * never matches `DB_PASSWORD`); what follows it up to the `=` or `:` is a bounded run of name
 * characters. A bare `pass` counts only as a whole word of a name (`DB_PASS`, not `bypass`).
 */
export const ASSIGNMENT_PATTERN =
  /(?<keep>(?:passw(?:or)?d|passphrase|(?<![a-z])pass(?![a-z])|pwd|secret|token|api[_-]?key|access[_-]?key|account[_-]?key|sharedaccesskey|private[_-]?key|client[_-]?secret|credentials?|auth[_-]?key)(?=(?<run>[\w.-]{0,24}))\k<run>["']?[ \t]{0,5}[=:][ \t]{0,5})(?<secret>"(?:[^"\\\n]|\\.){0,1000}"|'[^'\n]{0,1000}'|[^\s"'`,;&)]{1,1000})/gi;

const KEY_BEGIN = /-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/gi;
const KEY_END = /-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/gi;
/** PuTTY's private key format: the lines after `Private-Lines: N`. */
const PUTTY_PRIVATE =
  /(Private-Lines:[ \t]{0,5}\d{1,3}\r?\n)((?:[A-Za-z0-9+/=]{1,200}\r?\n){0,100}[A-Za-z0-9+/=]{0,200})/g;

/**
 * Private-key blocks replaced whole. A block whose END is missing (cut off, or beyond what was
 * read) is redacted to the end of the text: its body is the secret.
 */
function redactKeyBlocks(text: string): string {
  if (!/-----begin /i.test(text)) return text;
  KEY_BEGIN.lastIndex = 0;
  let out = "";
  let from = 0;
  for (let begin = KEY_BEGIN.exec(text); begin; begin = KEY_BEGIN.exec(text)) {
    out += text.slice(from, begin.index) + REDACTED;
    KEY_END.lastIndex = begin.index + begin[0].length;
    const end = KEY_END.exec(text);
    if (!end) return out;
    from = end.index + end[0].length;
    KEY_BEGIN.lastIndex = from;
  }
  return out + text.slice(from);
}

/** Characters that end a URL. */
const URL_END = /[\s"'`<>]/;

/**
 * `scheme://user:password@host`: the password, which may itself hold `@`, `/` or `:` (the last `@`
 * before the host ends it). Code, not a pattern: each `://` is looked at once, up to the next
 * whitespace or quote (at most 512 characters), and the next search starts past what it looked
 * at, so the work is linear whatever the text.
 */
function redactUrlPasswords(text: string): string {
  if (!text.includes("://")) return text;
  let out = "";
  let done = 0;
  for (let at = text.indexOf("://"); at >= 0; at = text.indexOf("://", at)) {
    const start = at + 3;
    let end = start;
    while (end < text.length && end - start < 512 && !URL_END.test(text[end]!)) end++;
    const authority = text.slice(start, end);
    const colon = authority.search(/[:/@]/);
    const last = authority.lastIndexOf("@");
    // user, then ':', then the password up to the last '@'; the user holds no ':', '/' or '@'.
    if (colon > 0 && authority[colon] === ":" && last > colon + 1) {
      out += text.slice(done, start + colon + 1) + REDACTED;
      done = start + last;
    }
    at = Math.max(end, start);
  }
  return out + text.slice(done);
}

/** A MySQL client's name, which makes a glued `-p` its password. */
const MYSQL_CLIENT = /(?<![\w-])(?:mysql|mysqldump|mysqladmin|mysqlsh|mariadb)(?![\w-])/g;
const GLUED_P = /([ \t]-p)([^\s'"`]{1,200})/g;

/**
 * `mysql -pPASSWORD`: the password glued to `-p`, on the line of a MySQL client's name (`-p`
 * alone asks for it; `-P` is the port). Each line is looked at once, from the first client name
 * on it, for at most 2000 characters.
 */
function redactMysqlPasswords(text: string): string {
  if (!/mysql|mariadb/i.test(text)) return text;
  let out = "";
  let done = 0;
  MYSQL_CLIENT.lastIndex = 0;
  for (let name = MYSQL_CLIENT.exec(text); name; name = MYSQL_CLIENT.exec(text)) {
    const lineEnd = text.indexOf("\n", name.index);
    const end = Math.min(lineEnd < 0 ? text.length : lineEnd, name.index + 2000);
    const line = text.slice(name.index, end).replace(GLUED_P, `$1${REDACTED}`);
    out += text.slice(done, name.index) + line;
    done = end;
    MYSQL_CLIENT.lastIndex = end;
  }
  return out + text.slice(done);
}

/** `text` with private keys, tokens, credential assignments and URL passwords replaced. */
export function redact(text: string): string {
  let out = redactKeyBlocks(text);
  out = out.replace(PUTTY_PRIVATE, `$1${REDACTED}`);
  for (const { pattern } of TOKEN_PATTERNS) out = out.replace(pattern, REDACTED);
  out = redactMysqlPasswords(redactUrlPasswords(out));
  for (const { pattern } of VALUE_PATTERNS) {
    out = out.replace(
      pattern,
      (match, keep: string, value: string) =>
        value.startsWith(REDACTED) ? match : `${keep}${REDACTED}`,
    );
  }
  return out.replace(ASSIGNMENT_PATTERN, (match, key: string, sep: string, value: string) => {
    if (value.startsWith(REDACTED) || value.startsWith(`"${REDACTED}`)) return match;
    return `${key}${sep}${REDACTED}`;
  });
}
