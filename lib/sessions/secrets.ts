/**
 * Secrets that must never reach a handoff, as data. The token families follow the rules secret
 * scanners publish, chiefly gitleaks' default rules (`config/gitleaks.toml` in
 * github.com/gitleaks/gitleaks, commit 009e025; rule ids are given with each pattern), narrowed
 * to what a transcript holds and rewritten for JavaScript's backtracking engine: every pattern is
 * linear (a fixed prefix, then bounded runs of character classes that do not overlap their
 * neighbours), and {@linkcode redact} is only ever given bounded text.
 *
 * @module
 */

/** What replaces a secret. */
export const REDACTED = "[redacted]";

/** Credentials recognisable by their own shape, wherever they appear. */
export const TOKEN_PATTERNS: readonly { id: string; pattern: RegExp }[] = [
  // anthropic-api-key, anthropic-admin-api-key; openai-api-key (sk-proj-, sk-svcacct-, sk-)
  { id: "anthropic-api-key", pattern: /\bsk-ant-[A-Za-z0-9_-]{8,200}/g },
  { id: "openai-api-key", pattern: /\bsk-[A-Za-z0-9_-]{16,200}/g },
  // aws-access-token
  { id: "aws-access-token", pattern: /\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b/g },
  // github-pat, github-oauth, github-app-token, github-refresh-token, github-fine-grained-pat
  { id: "github-token", pattern: /\bgh[pousr]_[A-Za-z0-9]{20,255}/g },
  { id: "github-fine-grained-pat", pattern: /\bgithub_pat_[A-Za-z0-9_]{20,255}/g },
  // gitlab-pat and the other glXX- tokens
  { id: "gitlab-token", pattern: /\bgl(?:pat|ptt|dt|rt|cbt|oas|imt)-[A-Za-z0-9_-]{20,255}/g },
  // npm-access-token
  { id: "npm-access-token", pattern: /\bnpm_[A-Za-z0-9]{36}\b/g },
  // pypi-upload-token
  { id: "pypi-upload-token", pattern: /\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,400}/g },
  // slack-bot-token, slack-user-token, slack-app-token, slack-config-access-token …
  { id: "slack-token", pattern: /\bxox[abeoprs]-[A-Za-z0-9-]{8,255}/g },
  { id: "slack-app-token", pattern: /\bxapp-\d-[A-Za-z0-9-]{8,255}/g },
  // stripe-access-token
  { id: "stripe-access-token", pattern: /\b(?:sk|rk)_(?:test|live|prod)_[A-Za-z0-9]{10,99}/g },
  // gcp-api-key
  { id: "gcp-api-key", pattern: /\bAIza[A-Za-z0-9_-]{35}/g },
  // huggingface-access-token
  { id: "huggingface-access-token", pattern: /\bhf_[A-Za-z]{34}\b/g },
  // sendgrid-api-token
  { id: "sendgrid-api-token", pattern: /\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}/g },
  // digitalocean-pat, digitalocean-access-token, digitalocean-refresh-token
  { id: "digitalocean-token", pattern: /\bdo[por]_v1_[a-f0-9]{64}/g },
  // shopify-access-token, shopify-custom-access-token, shopify-private-app-access-token
  { id: "shopify-token", pattern: /\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}/g },
  // databricks-api-token
  { id: "databricks-api-token", pattern: /\bdapi[a-f0-9]{32}/g },
  // jwt
  {
    id: "jwt",
    pattern: /\beyJ[A-Za-z0-9_-]{8,4000}\.eyJ[A-Za-z0-9_-]{8,8000}\.[A-Za-z0-9_-]{8,4000}/g,
  },
  // curl-auth-header: a bearer token, even without its header
  { id: "bearer-token", pattern: /\bBearer[ \t]{1,5}[A-Za-z0-9._~+/=-]{8,4000}/g },
];

/** `Authorization: <scheme> <credentials>` (and Proxy-Authorization): the credentials. */
const AUTH_HEADER =
  /(authorization["']?[ \t]{0,5}[=:][ \t]{0,5}["']?)((?:Bearer|Basic|Token|Digest|Negotiate)[ \t]{1,5})?[^\s"'`,;]{1,4000}/gi;

/**
 * A value given to a key that names a credential: `password=…`, `DB_PASSWORD=…`,
 * `MY_API_KEY: …`, `AWS_SECRET_ACCESS_KEY=…`, `"password": "…"`. The key word
 * may sit inside a longer name (no `\b`: `_` is a word character, so `\bPASSWORD` never matches
 * `DB_PASSWORD`); what follows it up to the `=` or `:` is a bounded run of name characters.
 */
export const ASSIGNMENT_PATTERN =
  /(passw(?:or)?d|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|client[_-]?secret|credentials?|auth[_-]?key)([\w.-]{0,40}["']?[ \t]{0,5}[=:][ \t]{0,5})("[^"\n]{0,1000}"|'[^'\n]{0,1000}'|[^\s"'`,;&)]{1,1000})/gi;

/** `scheme://user:password@host`: the password. */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]{1,20}:\/\/[^\s:/@"'`]{1,200}:)([^\s/@"'`]{1,200})@/gi;

const KEY_BEGIN = /-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/g;
const KEY_END = /-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----/g;

/**
 * Private-key blocks replaced whole. A block whose END is missing (cut off, or beyond what was
 * read) is redacted to the end of the text: its body is the secret.
 */
function redactKeyBlocks(text: string): string {
  if (!text.includes("-----BEGIN ")) return text;
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

/** `text` with private keys, tokens, credential assignments and URL passwords replaced. */
export function redact(text: string): string {
  let out = redactKeyBlocks(text);
  out = out.replace(AUTH_HEADER, (_, key: string, scheme = "") => `${key}${scheme}${REDACTED}`);
  for (const { pattern } of TOKEN_PATTERNS) out = out.replace(pattern, REDACTED);
  if (out.includes("://")) out = out.replace(URL_PASSWORD, `$1${REDACTED}@`);
  return out.replace(ASSIGNMENT_PATTERN, (match, key: string, sep: string, value: string) => {
    if (value === REDACTED || value.startsWith(REDACTED)) return match;
    return `${key}${sep}${REDACTED}`;
  });
}
