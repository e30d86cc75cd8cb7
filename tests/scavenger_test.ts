import assert from "node:assert/strict";
import { redact, renderHandoff, scavengeFile, Scavenger } from "../lib/sessions/scavenger.ts";
import { transcriptPath } from "./helpers/fixtures.ts";
import { REPO_DIR } from "./helpers/lifeline.ts";
import { withTempDir } from "./helpers/temp.ts";

const CRAFTED = `${REPO_DIR}/tests/fixtures/lifeline/crafted-transcript.jsonl`;
const FACTS = {
  sessionId: "crafted-1",
  cwd: "/home/user/shop",
  transcriptPath: "/t.jsonl",
  cause: "no heartbeat for 900s and its tmux pane is gone",
  rescuedAt: "2026-11-30T11:00:00.000Z",
};

Deno.test("a transcript built from the reference's row shapes gives exactly this handoff", async () => {
  const handoff = renderHandoff(FACTS, await scavengeFile(CRAFTED));
  assert.equal(
    handoff,
    `# Handoff from session crafted-1

Rescued by \`lifeline daemon stale\` at 2026-11-30T11:00:00.000Z: no heartbeat for 900s and its tmux pane is gone. This is what the session was doing, from its transcript. Check before you trust it: the work may be half done.

## Facts
- Session: crafted-1
- Working directory: /home/user/shop
- Git branch: feature/cart
- Model: claude-sonnet-5
- First activity: 2026-11-30T10:00:00.000Z
- Last activity: 2026-11-30T10:32:00.100Z
- Transcript: /t.jsonl

## Last user prompts
1. Fix the cart totals; the secret is password=[redacted] and key [redacted]
2. Now finish the discount test

## Last assistant messages
1. I'll look at the cart module first.
2. Writing the discount test now.
   It covers 10% and 25% coupons.

## Open todos
- [ ] Fix rounding in totals (in_progress)
- [ ] Add a test for discounts
- [ ] #1 Update the changelog

## Files edited or written
- /home/user/shop/src/cart.ts
- /home/user/shop/CHANGELOG.md

## Unresolved tool errors
- Bash \`npm run lint -- --token=[redacted]\`: Exit code 2
   lint: 3 problems

## Last API error
- rate_limit at 2026-11-30T10:32:00.000Z: "You've hit your 5-hour limit · resets 2pm (UTC)" (resets 2026-11-30T15:00:00.000Z)

## Compactions
- 2026-11-30T10:30:00.000Z (auto, 167000 tokens before)

## Notes
- 1 unreadable transcript line was skipped.
`,
  );
});

Deno.test("the crafted transcript covers what the issue lists", async () => {
  const text = await Deno.readTextFile(CRAFTED);
  const rows = text.split("\n").slice(0, -1).map((line) => JSON.parse(line));
  const ids = rows.filter((r) => r.type === "assistant").map((r) => r.message.id);
  assert.ok(ids.some((id, i) => ids.indexOf(id) !== i), "streamed rows share a message.id");
  assert.ok(rows.some((r) => r.isApiErrorMessage && r.error === "rate_limit"));
  assert.ok(rows.some((r) => JSON.stringify(r).includes('"is_error":true')));
  assert.ok(rows.some((r) => JSON.stringify(r).includes('"TodoWrite"')));
  assert.ok(rows.some((r) => JSON.stringify(r).includes('"TaskUpdate"')));
  assert.ok(rows.some((r) => r.subtype === "compact_boundary"));
  assert.ok(rows.some((r) => r.type === "future-row-type"));
  assert.throws(() => JSON.parse(text.split("\n").at(-1)!), "a torn last line");
});

Deno.test("real 2.1.328 transcripts: prompts, replies, errors and the API error", async () => {
  const failed = await scavengeFile(transcriptPath("hh-tool-fail"));
  assert.deepEqual(failed.prompts, ["run a failing command"]);
  assert.deepEqual(failed.replies, ["The command failed with exit code 3."]);
  assert.deepEqual(failed.errors, [
    "Bash `echo to-stdout; echo to-stderr >&2; exit 3`: Exit code 3\nto-stdout\nto-stderr",
  ]);
  assert.equal(failed.model, "claude-opus-5-5");
  assert.equal(failed.skipped, 0);

  const ok = await scavengeFile(transcriptPath("hh-tool-ok"));
  assert.deepEqual(
    ok.replies,
    ["I'll run it.", "The command printed: hi"],
    "one reply per message.id",
  );
  assert.deepEqual(ok.errors, []);

  const limited = await scavengeFile(transcriptPath("screen-429-oauth"));
  assert.equal(
    limited.apiError,
    'rate_limit at 2026-11-30T15:54:57.076Z: "You\'ve hit your 5-hour limit · resets 5:54pm (UTC)" (resets 2026-11-30T17:54:57.000Z)',
  );
  assert.deepEqual(limited.replies, [], "the synthetic error row is not a reply");

  const overloaded = await scavengeFile(transcriptPath("screen-529"));
  assert.match(overloaded.apiError!, /^server_error at .*Repeated 529 Overloaded/);
});

Deno.test("secrets planted in a transcript never reach the handoff", () => {
  const secrets = [
    "sk-ant-api03-Zx9QvLm2Pp0aBcDeFgHiJkLmNoPqRsTuVwXyZ",
    "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_1234567890abcdefghijABCDEFGHIJ",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "xoxb-123456789012-abcdefghijkl",
    "hunter2",
    "s3cr3t-t0k3n",
  ];
  const scavenger = new Scavenger();
  const at = (n: number) => `2026-11-30T10:0${n}:00.000Z`;
  scavenger.addRow({
    type: "user",
    timestamp: at(0),
    message: { content: `deploy with ${secrets[0]} and password=hunter2` },
  });
  scavenger.addRow({
    type: "assistant",
    timestamp: at(1),
    message: {
      id: "m1",
      content: [
        { type: "text", text: `Using ${secrets[1]} and ${secrets[2]}, token: s3cr3t-t0k3n` },
        {
          type: "tool_use",
          id: "c1",
          name: "Bash",
          input: { command: `gh auth login --with-token ${secrets[3]}` },
        },
      ],
    },
  });
  scavenger.addRow({
    type: "user",
    timestamp: at(2),
    message: {
      content: [{
        type: "tool_result",
        tool_use_id: "c1",
        is_error: true,
        content: `bad token ${secrets[4]} ${
          secrets[5]
        }\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----`,
      }],
    },
  });
  const handoff = renderHandoff(FACTS, scavenger.summary());
  for (const secret of [...secrets, "MIIEow", "BEGIN RSA PRIVATE KEY"]) {
    assert.ok(!handoff.includes(secret), `leaked ${secret}`);
  }
  assert.match(handoff, /\[redacted\]/);
  assert.equal(redact("password: 'x y'"), "password: [redacted]");
});

Deno.test("a missing transcript still gives a handoff with what is known, and says why", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/nope.jsonl`;
    let problem = "";
    try {
      await scavengeFile(path);
    } catch (error) {
      problem = (error as Error).message;
    }
    const handoff = renderHandoff(
      { ...FACTS, transcriptPath: path, transcriptProblem: problem },
      null,
    );
    assert.match(handoff, /- Working directory: \/home\/user\/shop/);
    assert.match(handoff, /## Last user prompts\n- \(none\)/);
    assert.match(
      handoff,
      /## Notes\n- The transcript could not be read \(.*nope\.jsonl.*\); only the facts above are known\./,
    );
  });
});

Deno.test("memory stays bounded: only the last few of each kind are kept", () => {
  const scavenger = new Scavenger();
  for (let i = 0; i < 10_000; i++) {
    scavenger.addRow({ type: "user", timestamp: "t", message: { content: `prompt ${i}` } });
    scavenger.addRow({
      type: "assistant",
      timestamp: "t",
      message: {
        id: `m${i}`,
        content: [
          { type: "text", text: `reply ${i}` },
          { type: "tool_use", id: `c${i}`, name: "Write", input: { file_path: `/f${i}` } },
        ],
      },
    });
  }
  const summary = scavenger.summary();
  assert.deepEqual(summary.prompts, [
    "prompt 9995",
    "prompt 9996",
    "prompt 9997",
    "prompt 9998",
    "prompt 9999",
  ]);
  assert.equal(summary.replies.length, 5);
  assert.equal(summary.files.length, 100);
  assert.equal(summary.files.at(-1), "/f9999");
});

/** One sample of each credential family the handoff must never show, with the secret in it. */
const CREDENTIALS: Record<string, { text: string; secret: string }> = {
  "DB_PASSWORD=": { text: "export DB_PASSWORD=pg-Secret-42", secret: "pg-Secret-42" },
  "MY_API_KEY=": { text: "MY_API_KEY=myk3y-0123456789 npm start", secret: "myk3y-0123456789" },
  "AWS_SECRET_ACCESS_KEY=": {
    text: "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
  },
  'JSON "password"': {
    text: '{"user": "admin", "password": "c0rrect-h0rse"}',
    secret: "c0rrect-h0rse",
  },
  "Authorization: Bearer": {
    text: 'curl -H "Authorization: Bearer eyBearerToken.abc123xyz" https://api',
    secret: "eyBearerToken.abc123xyz",
  },
  "Authorization: Basic": {
    text: "Authorization: Basic YWRtaW46cGdwYXNzMTIz",
    secret: "YWRtaW46cGdwYXNzMTIz",
  },
  "password in a URL": {
    text: "DATABASE_URL is postgres://admin:pgpass@db.internal:5432/shop",
    secret: "pgpass",
  },
  "gho_ token": {
    text: "gh auth login gho_16C7e42F292c6912E7710c838347Ae178B4a",
    secret: "gho_16C7e42F292c6912E7710c838347Ae178B4a",
  },
  "npm_ token": {
    text: "//registry.npmjs.org/:_authToken npm_abcdefghijklmnopqrstuvwxyz0123456789",
    secret: "npm_abcdefghijklmnopqrstuvwxyz0123456789",
  },
  "ghp_ token": {
    text: "token ghp_1234567890abcdefghijABCDEFGHIJ0000",
    secret: "ghp_1234567890abcdefghijABCDEFGHIJ0000",
  },
  "github_pat_": {
    text: "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    secret: "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
  },
  "GitLab glpat-": { text: "glpat-abcdefghij0123456789", secret: "glpat-abcdefghij0123456789" },
  "Anthropic sk-ant-": {
    text: "ANTHROPIC=sk-ant-api03-Zx9QvLm2Pp0aBcDeFgHiJkLmNoPqRsTuVwXyZ",
    secret: "sk-ant-api03-Zx9QvLm2Pp0aBcDeFgHiJkLmNoPqRsTuVwXyZ",
  },
  "OpenAI sk-proj-": {
    text: "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
    secret: "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
  },
  "AWS access key id": { text: "AKIAIOSFODNN7EXAMPLE", secret: "AKIAIOSFODNN7EXAMPLE" },
  "Slack xoxb-": {
    text: "xoxb-123456789012-abcdefghijkl",
    secret: "xoxb-123456789012-abcdefghijkl",
  },
  "Stripe sk_live_": {
    text: "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    secret: "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
  },
  "Google AIza": {
    text: "key=AIzaSyA-1234567890abcdefghijklmnopqrstu",
    secret: "AIzaSyA-1234567890abcdefghijklmnopqrstu",
  },
  "Hugging Face hf_": {
    text: "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
    secret: "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
  },
  "a JWT": {
    text: "cookie eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    secret: "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
  },
  "a private key longer than the clip length": {
    text: `here is the key\n-----BEGIN OPENSSH PRIVATE KEY-----\n${
      "b3BlbnNzaC1rZXktdjEAAAAA".repeat(150)
    }\n-----END OPENSSH PRIVATE KEY-----\nthanks`,
    secret: "b3BlbnNzaC1rZXktdjEAAAAA",
  },
  "a private key cut off before its END": {
    text: `-----BEGIN RSA PRIVATE KEY-----\n${"MIIEowIBAAKCAQEA".repeat(2000)}`,
    secret: "MIIEowIBAAKCAQEA",
  },
};

/**
 * One sample of each credential format the red team found surviving redaction (issue 13), and of
 * each family secrets.ts gained then: [name, text, the secret part that must not survive].
 */
const MORE_CREDENTIALS: [string, string, string][] = [
  ["DB_PASS env", "DB_PASS=Sup3rS3cretPw", "Sup3rS3cretPw"],
  ["SMTP_PASS", "export SMTP_PASS=hunter2hunter2", "hunter2hunter2"],
  ["mysql -p", "mysql -u root -pMyR00tPw db", "MyR00tPw"],
  ["--password space", "psql --password Pg5ecretPw", "Pg5ecretPw"],
  ["--password= ok?", "app --password=Pg5ecretPw", "Pg5ecretPw"],
  ["curl -u", "curl -u admin:Adm1nPassw0rd https://api.example.com", "Adm1nPassw0rd"],
  [
    "aws configure set",
    "aws configure set aws_secret_access_key wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",
    "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",
  ],
  [
    "aws cli flag",
    "--aws-secret-access-key wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",
    "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",
  ],
  [
    "azure conn string",
    "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFy==;EndpointSuffix=core.windows.net",
    "Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFy",
  ],
  ["URL pw with @", "postgres://admin:p@ssw0rd@db.internal:5432/app", "ssw0rd"],
  ["URL pw with /", "redis://default:ab/cdEFgh12@cache:6379", "ab/cdEFgh12"],
  ["yaml pw spaces", "password: correct horse battery staple", "horse battery staple"],
  [
    "Cookie header",
    "Cookie: session=9f8e7d6c5b4a39281706f5e4d3c2b1a0",
    "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
  ],
  [
    "APP_KEY laravel",
    "APP_KEY=base64:2fl+Ktvkfl+Fuz4Qp/A75G2RTiWVA/ZoKZvp6fiiM10=",
    "2fl+Ktvkfl+Fuz4Qp/A75G2RTiWVA/ZoKZvp6fiiM10=",
  ],
  [
    "ENCRYPTION_KEY",
    "ENCRYPTION_KEY=6b3a55e0261b0304143f805a24924d0c1c44524821305f31d9277843b8a10f4e",
    "6b3a55e0261b0304143f805a24924d0c1c44524821305f31d9277843b8a10f4e",
  ],
  [
    "telegram bot",
    "https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getMe",
    "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
  ],
  [
    "discord bot token",
    "MTIzNDU2Nzg5MDEyMzQ1Njc4.GaBcDe.abcdefghijklmnopqrstuvwxyz0123456789AB",
    "abcdefghijklmnopqrstuvwxyz0123456789AB",
  ],
  [
    "vault token",
    "VAULT_ADDR=x hvs.CAESIJlWh8AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "hvs.CAESIJlWh8AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
  ],
  [
    "age secret key",
    "AGE-SECRET-KEY-1QQPQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ",
    "AGE-SECRET-KEY-1QQPQQQQ",
  ],
  ["twilio api key", "SK0123456789abcdef0123456789abcdef", "SK0123456789abcdef0123456789abcdef"],
  ["mailgun", "key-0123456789abcdef0123456789abcdef", "key-0123456789abcdef0123456789abcdef"],
  [
    "google oauth ya29",
    "ya29.a0AfH6SMBxYzAbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "ya29.a0AfH6SMBxYzAbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
  ],
  [
    "GOCSPX client secret",
    "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",
    "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",
  ],
  [
    "doppler",
    "dp.pt.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
    "dp.pt.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
  ],
  [
    "linear",
    "lin_api_abcdefghijklmnopqrstuvwxyz0123456789ABCD",
    "lin_api_abcdefghijklmnopqrstuvwxyz0123456789ABCD",
  ],
  [
    "grafana sa",
    "glsa_abcdefghijklmnopqrstuvwxyz012345_0a1b2c3d",
    "glsa_abcdefghijklmnopqrstuvwxyz012345_0a1b2c3d",
  ],
  [
    "postman",
    "PMAK-0123456789abcdef01234567-0123456789abcdef0123456789abcdef01",
    "PMAK-0123456789abcdef01234567",
  ],
  [
    "atlassian",
    "ATATT3xFfGF0abcdefghijklmnopqrstuvwxyz0123456789-_ABCDEFGHIJKLMN=0A1B2C3D",
    "ATATT3xFfGF0abcdefghijklmnopq",
  ],
  [
    "heroku",
    "HRKU-0123abcd-4567-89ef-0123-456789abcdef",
    "HRKU-0123abcd-4567-89ef-0123-456789abcdef",
  ],
  [
    "sentry",
    "sntrys_eyJpYXQiOjE2ODAwMDAwMDB9_abcdefghijklmnopqrstuvwxyz0123456789ABCDEF",
    "sntrys_eyJpYXQiOjE2ODAwMDAwMDB9_abcdef",
  ],
  [
    "groq",
    "gsk_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOP",
    "gsk_abcdefghijklmnopqrstuvwxyz0123456789",
  ],
  [
    "replicate",
    "r8_abcdefghijklmnopqrstuvwxyz0123456789AB",
    "r8_abcdefghijklmnopqrstuvwxyz0123456789AB",
  ],
  [
    "1password svc",
    "ops_eyJzaWduSW5BZGRyZXNzIjoiYWJjIn0abcdefghijklmnopqrstuvwxyz",
    "ops_eyJzaWduSW5BZGRyZXNzIjoiYWJjIn0",
  ],
  ["gitlab runner glrt ok?", "glrt-abcdefghijklmnopqrstu", "glrt-abcdefghijklmnopqrstu"],
  [
    "npm token 36",
    "npm_abcdefghijklmnopqrstuvwxyz0123456789",
    "npm_abcdefghijklmnopqrstuvwxyz0123456789",
  ],
  [
    "//registry _authToken",
    "//registry.npmjs.org/:_authToken=6e6b2a1c-1234-4cde-9f00-abcdefabcdef",
    "6e6b2a1c-1234-4cde-9f00-abcdefabcdef",
  ],
  [
    "docker auth b64",
    '{"auths":{"ghcr.io":{"auth":"dXNlcjpnaHBfc2VjcmV0c2VjcmV0"}}}',
    "dXNlcjpnaHBfc2VjcmV0c2VjcmV0",
  ],
  ["netrc", "machine api.example.com login me password N3trcPassw0rd", "N3trcPassw0rd"],
  ["pgpass line", "db.internal:5432:app:admin:PgPassFileSecret", "PgPassFileSecret"],
  [
    "ssh -i key inline? putty",
    "PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 1\nAAAAIFq3c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0",
    "AAAAIFq3c2VjcmV0c2VjcmV0",
  ],
  [
    "x-api-key ok?",
    "X-Api-Key: 0123456789abcdef0123456789abcdef",
    "0123456789abcdef0123456789abcdef",
  ],
  [
    "sk-ant after _",
    "ANTHROPIC_KEY_sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
    "abcdefghijklmnopqrstuvwxyz",
  ],
  [
    "ghp after word char",
    "token_ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "abcdefghijklmnopqrstuvwxyz0123456789",
  ],
  [
    "stripe pk? (public, skip)",
    "whsec_abcdefghijklmnopqrstuvwxyz012345",
    "whsec_abcdefghijklmnopqrstuvwxyz012345",
  ],
  ["JSON secret w/ escaped quote", '{"password": "ab\\"cdSecretTail"}', "SecretTail"],
  ["auth basic b64 alone", "Authorization: Basic YWRtaW46c2VjcmV0", "YWRtaW46c2VjcmV0"],
  [
    "Authorization space before colon",
    "Authorization : Bearer abcdefghijklmnop",
    "abcdefghijklmnop",
  ],
  [
    "private key spaced BEGIN",
    "-----BEGIN  RSA PRIVATE KEY-----\nMIIEsecretbody\n-----END RSA PRIVATE KEY-----",
    "MIIEsecretbody",
  ],
  [
    "openssh key lowercase?",
    "-----begin openssh private key-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----end openssh private key-----",
    "b3BlbnNzaC1rZXktdjEAAAAA",
  ],
  [
    "escaped \\n key in JSON-ish",
    '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvSecretBody\\n-----END PRIVATE KEY-----\\n"',
    "MIIEvSecretBody",
  ],
  [
    "Grafana Cloud glc_",
    "glc_eyJvIjoiMTIzNDU2IiwibiI6InN0YWNrLTEyMzQ1Ni1obS1yZWFkIiwiayI6ImFiYyJ9",
    "eyJvIjoiMTIzNDU2",
  ],
  [
    "Azure SharedAccessKey",
    "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo=",
    "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo=",
  ],
  ["Set-Cookie", "Set-Cookie: sid=s%3Aabcdef0123456789; Path=/; HttpOnly", "s%3Aabcdef0123456789"],
  [
    "aws_session_token, space-separated",
    "aws configure set aws_session_token IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQ",
    "IQoJb3JpZ2luX2VjEJr",
  ],
];

for (const [name, text, secret] of MORE_CREDENTIALS) CREDENTIALS[name] = { text, secret };

Deno.test("every credential family is redacted before clipping, wherever it appears", async (t) => {
  for (const [name, { text, secret }] of Object.entries(CREDENTIALS)) {
    await t.step(name, () => {
      const scavenger = new Scavenger();
      scavenger.addRow({ type: "user", timestamp: "t", message: { content: text } });
      scavenger.addRow({
        type: "assistant",
        timestamp: "t",
        message: {
          id: "m1",
          content: [
            { type: "text", text: `Noted: ${text}` },
            { type: "tool_use", id: "c1", name: "Bash", input: { command: `echo ${text}` } },
          ],
        },
      });
      scavenger.addRow({
        type: "user",
        timestamp: "t",
        message: {
          content: [{ type: "tool_result", tool_use_id: "c1", is_error: true, content: text }],
        },
      });
      const handoff = renderHandoff(FACTS, scavenger.summary());
      assert.ok(!handoff.includes(secret), `leaked ${secret} in:\n${handoff}`);
      assert.match(handoff, /\[redacted\]/);
    });
  }
});

Deno.test("redaction is linear: 1 MB of adversarial text takes well under 100 ms", () => {
  const size = 1 << 20;
  const fill = (unit: string) => unit.repeat(Math.ceil(size / unit.length));
  const inputs = [
    fill("password"),
    fill("DB_PASSWORD="),
    "token" + " ".repeat(size),
    fill("ab://c:"),
    fill("-----BEGIN "),
    fill("-----BEGIN PRIVATE KEY-----"),
    "eyJ" + "a".repeat(size),
    fill("eyJaaaaaaaaa."),
    fill("Bearer "),
    fill("authorization: "),
    'password="' + "x".repeat(size),
    "api_key" + "_".repeat(size),
    fill("sk-"),
  ];
  for (const input of inputs) {
    const times = [0, 1, 2].map(() => {
      const started = performance.now();
      redact(input);
      return performance.now() - started;
    }).sort((a, b) => a - b);
    assert.ok(times[1]! < 100, `${JSON.stringify(input.slice(0, 20))}…: ${times[1]} ms`);
  }
});

Deno.test("a pending tool call keeps a few hundred bytes, not its input", async () => {
  // 300 Write calls of 200 KB with no results: a session killed mid-write.
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--v8-flags=--expose-gc",
      "--allow-read",
      `${REPO_DIR}/tests/helpers/scavenger_memory.ts`,
      "300",
      "200000",
    ],
    stdout: "piped",
  }).output();
  assert.ok(out.success);
  const { retained, files } = JSON.parse(new TextDecoder().decode(out.stdout));
  assert.equal(files, 100);
  assert.ok(retained < 8 << 20, `retained ${(retained / (1 << 20)).toFixed(1)} MiB`);
});

Deno.test("open tasks and todos are bounded: memory and the handoff keep the newest", async (t) => {
  await t.step("200,000 tasks created (with their ids) hold a few MiB, not hundreds", async () => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--v8-flags=--expose-gc",
        "--allow-read",
        `${REPO_DIR}/tests/helpers/scavenger_memory.ts`,
        "tasks",
        "200000",
      ],
      stdout: "piped",
    }).output();
    assert.ok(out.success);
    const { retained, todos, todosLeftOut } = JSON.parse(new TextDecoder().decode(out.stdout));
    assert.equal(todos, 100);
    assert.equal(todosLeftOut, 199_900);
    assert.ok(retained < 8 << 20, `retained ${(retained / (1 << 20)).toFixed(1)} MiB`);
  });
  await t.step("a TodoWrite of 10,000 open todos and 5,000 tasks: a bounded handoff", () => {
    const scavenger = new Scavenger();
    for (let i = 0; i < 5000; i++) {
      scavenger.addRow({
        type: "assistant",
        timestamp: "t",
        message: {
          id: `m${i}`,
          content: [{
            type: "tool_use",
            id: `c${i}`,
            name: "TaskCreate",
            input: { subject: `t${i}` },
          }],
        },
      });
      scavenger.addRow({
        type: "user",
        timestamp: "t",
        message: { content: [{ type: "tool_result", tool_use_id: `c${i}`, content: "ok" }] },
        toolUseResult: { task: { id: String(i) } },
      });
    }
    const todos = Array.from({ length: 10_000 }, (_, i) => ({
      content: `todo ${i} ${"y".repeat(280)}`,
      status: "pending",
    }));
    scavenger.addRow({
      type: "assistant",
      timestamp: "t",
      message: {
        id: "w",
        content: [{ type: "tool_use", id: "w1", name: "TodoWrite", input: { todos } }],
      },
    });
    const handoff = renderHandoff(FACTS, scavenger.summary());
    assert.ok(handoff.length <= 64 << 10, `${handoff.length} characters`);
    assert.match(handoff, /- \[ \] todo 0 /); // the list's own order, from its start
    assert.match(handoff, /- \[ \] #4999 t4999/); // the newest task
    assert.ok(!handoff.includes("#4899 t4899"), "an older task is listed");
    assert.match(handoff, /… and 14800 more, older, not listed/);
  });
});
