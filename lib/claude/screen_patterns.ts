/**
 * What the watcher recognises on an agent's screen, kept as data (reference §4 and §9; the corpus
 * in tests/fixtures/screens/ checks them against real renders and public reports). Patterns are
 * applied to one normalised item at a time (escapes stripped, curly quotes straightened, the
 * client's leading glyph removed, wrapped lines rejoined, at most {@linkcode MAX_ITEM_CHARS}),
 * match case-insensitively, accept every separator the client has used (`·` `∙` `•` `-` `—`), and
 * are linear: no nested or adjacent unbounded quantifiers over the same characters.
 *
 * @module
 */

import type { NamedPattern } from "./patterns.ts";

/** Longest item text a pattern sees; a banner is a line or two, never more. */
export const MAX_ITEM_CHARS = 2000;

/** A separator between a banner's parts. */
const S = "[·∙•—–-]";

/**
 * A usage-limit banner: the phrase starts the item, so agent output that merely mentions a limit,
 * quotes a banner mid-sentence, or names a package does not match. The client's own
 * second-person words are a banner even where a model limit names no reset; generic words
 * (`… limit reached`) only with a reset.
 */
export const LIMIT_BANNERS: readonly (NamedPattern & { needsReset: boolean })[] = [
  {
    // 2.1.x: `You've hit your 5-hour limit · resets 3pm (UTC)`, also session, weekly, Opus,
    // Sonnet, Fable, usage credit, fast, monthly and extra-usage limits, or no name at all.
    name: "you've hit your limit",
    needsReset: false,
    pattern: /^You've (?:hit|reached) your (?:[\w-]{1,20} ){0,3}limit\b/i,
  },
  {
    // 2.0.x: `5-hour limit reached ∙ resets 3pm`; `Limit reached (resets 1h 13m)`.
    name: "limit reached",
    needsReset: true,
    pattern: /^(?:[\w-]{1,20} ){0,2}limit (?:reached|hit)\b/i,
  },
  {
    // 1.0.x: `Claude usage limit reached. Your limit will reset at 3pm (America/Bogota).` and
    // the raw `Claude AI usage limit reached|1750708800`.
    name: "Claude usage limit reached",
    needsReset: false,
    pattern: /^Claude (?:AI )?usage limit reached\b/i,
  },
  {
    name: "out of usage credits",
    needsReset: false,
    pattern: /^You're out of (?:usage credits|extra usage)\b/i,
  },
];

/** A limit-menu option: the menu a limit opens, not any menu. */
export const LIMIT_MENU_OPTION =
  /^(?:\d{1,2}\.\s*)?(?:Stop and wait\b|Stop$|Upgrade your plan|Switch to (?:usage|extra)|Add funds|Use (?:usage|extra)|Buy (?:more|extra)|Request more|Wait for)/i;

/** The limit names the client uses, to read a banner's kind. */
export const LIMIT_NAMES =
  /\b(5-hour|five[ _]hour|session|weekly|seven[ _]day|opus|sonnet|fable|usage credit|extra usage|fast|monthly)\b/i;

/** A reset written on a banner (its time is read by `reset_time.ts`). */
export const RESET_MENTION =
  /\bresets?\b|\blimit will reset\b|\|\d{10,13}\b|\btry again in \d{1,4} ?(?:s|sec|seconds?|m|mins?|minutes?|h|hrs?|hours?)\b/i;

/**
 * The client's own auto-continue is armed (2.1.234+): typing now would cancel it. In the
 * conversation (`● Usage limit reached · continuing automatically at 5:54pm · esc to cancel`,
 * also after `Usage limit reached again after you continued`) or in the footer
 * (`Continuing automatically at 5:54pm · Esc to cancel`, then `Continuing shortly`).
 */
export const NATIVE_ARMED = new RegExp(
  String.raw`continuing automatically(?: at)? ([^·∙•]{1,40}?)\s*${S}\s*esc (?:or type )?to cancel` +
    String.raw`|^Continuing shortly\b`,
  "i",
);

/** The user cancelled the client's auto-continue. */
export const NATIVE_CANCELLED = /Automatic continue cancelled/i;

/**
 * The task list the client draws above the input box: `8 tasks (4 done, …)`, `◼ a`, `□ b`,
 * `… +3 completed`, `new task? /clear to save 300k tokens`.
 */
export const TASK_WIDGET =
  /^\d{1,4} tasks? \(|^[◼◻□■▪▫☐☑✓✔] |^… \+\d{1,4} (?:completed|pending|more)|^new task\? /i;

/** The effort level the client draws right-aligned above the input box: `◐ medium · /effort`. */
export const EFFORT_WIDGET = /^\S{1,2} [a-z]{2,12} · \/effort$/;

/**
 * Items the client prints under a banner that do not make it an old banner: remedy hints,
 * turn-duration rows, its own notices, its task-list widget.
 */
export const BANNER_COMPANIONS: readonly RegExp[] = [
  /^\/(?:upgrade|extra-usage|rate-limit-options|login|model|usage)\b/i,
  /^Usage limit reached\b/i,
  /^Automatic continue cancelled/i,
  /^Continuing (?:automatically|shortly)/i,
  /limit resets\b/i,
  /^What do you want to do\?/i,
  /^(?:Upgrade|Switch|Add funds|Stop and wait)\b/i,
  /^Resets? (?:by |at |in |on )?\S/i,
  TASK_WIDGET,
  // `✻ Sautéed for 1s`, `✻ Cooked for 0s · done 3:56 PM`: the turn's duration.
  /^[\p{L}'-]{2,30} for \d{1,6}(?:\.\d{1,3})?\s?(?:ms|s|m|h)\b/iu,
];

/** The agent is working: never type (reference §4b, §4e, §9). */
export const BUSY: readonly NamedPattern[] = [
  { name: "esc to interrupt", pattern: /\besc to interrupt\b/i },
  { name: "retrying", pattern: /\b[Rr]etrying (?:in\b|…|\.\.\.)/ },
  { name: "retry attempt", pattern: /\battempt \d{1,3}\/\d{1,3}\b/i },
  { name: "next try", pattern: /\bnext try in\b/i },
  { name: "waiting for an agent", pattern: /^Waiting for \d{1,3} background agents? to finish/i },
  {
    name: "waiting for the API",
    pattern: /Waiting for API response|No response from the API after/i,
  },
  // A spinner row: `✶ Organizing… (161s · ↑ 0 tokens)`, `* Sautéing…` (a turn-duration row
  // has no ellipsis: `✻ Sautéed for 1s`).
  { name: "spinner", pattern: /^[\p{L}'-]{2,30}(?:…|\.\.\.)(?:\s?\(|$)/u },
];

/** Permission and confirmation prompts, and dialogs: a key pressed here does something. */
export const DIALOGS: readonly NamedPattern[] = [
  { name: "a [y/N] confirmation", pattern: /\[(?:y\/n|yes\/no)\]/i },
  {
    name: "a permission question",
    pattern: /Do you want to [a-z]{2,20}\b/i,
  },
  {
    name: "the trust dialog",
    pattern:
      /Quick safety check|Yes, I trust this folder|Do you trust the files|trust this folder/i,
  },
  {
    name: "the auto-mode dialog",
    pattern: /Enter to stay in auto mode|Auto mode can't check actions/i,
  },
  {
    name: "a confirmation",
    pattern: /Enter to confirm|Esc to cancel · Tab to amend|Press Enter to continue/i,
  },
  // A numbered option with the pointer: `❯ 1. Yes` (or `>` in older builds).
  { name: "an option menu", pattern: /^[❯>›]\s?\d{1,2}\.\s+\S/ },
  // Options of the interrupt and login menus, and the `❯ No` default of the auto-mode prompt.
  { name: "a menu choice", pattern: /^[❯>›]\s?(?:No|Yes)\b(?:,|$)/ },
];

/** The limit menu (older builds ask when a limit is hit). */
export const LIMIT_MENU = /What do you want to do\?/i;

/** The one limit-menu choice that is safe to take with Enter. */
export const SAFE_MENU_CHOICE = /^[❯>›]\s?(?:\d{1,2}\.\s*)?Stop and wait for limit to reset\b/i;

/** A menu's own key hint, as the limit menu shows it. */
export const MENU_KEY_HINT = /^\(?Enter to confirm · Esc to cancel\)?$/i;

/** The highlighted option of a menu. */
export const MENU_POINTER = /^[❯>›]\s?(?:\d{1,2}\.\s*)?(\S.{0,80})$/;

/** Trouble no waiting fixes: authentication, billing, the organisation (never type). */
export const PERMANENT_PROBLEMS: readonly NamedPattern[] = [
  {
    name: "a login is needed",
    pattern:
      /Please run \/login|Failed to authenticate|Invalid API key|invalid x-api-key|OAuth token (?:has )?expired|authentication_error|Not logged in/i,
  },
  {
    name: "billing",
    pattern:
      /Credit balance (?:is )?too low|billing_error|payment (?:is )?required|insufficient credit/i,
  },
  {
    name: "the organisation is paused or out of usage",
    pattern:
      /Usage is paused for your organization|Your org(?:anization)? is out of usage|organization has been disabled/i,
  },
  {
    name: "the organisation is not allowed",
    pattern: /organization (?:is )?not allowed|account (?:is )?on hold|account has been disabled/i,
  },
  { name: "the prompt is too long", pattern: /Prompt is too long/i },
  {
    // 400/404/413/422: the request itself is refused; sending it again gets the same answer.
    name: "a request the API refuses",
    pattern:
      /API Error:? \(?(?:400|404|413|422)\b|invalid_request_error|not_found_error|request_too_large|Image was too large/i,
  },
  {
    name: "cloud credentials",
    pattern:
      /Could not load (?:the )?credentials|security token included in the request is (?:invalid|expired)|credentials? (?:have |has )?expired|UnrecognizedClientException|AccessDeniedException|Could not find default credentials/i,
  },
  { name: "Anthropic is unreachable", pattern: /Unable to connect to Anthropic services/i },
  {
    name: "a design login is needed",
    pattern: /rejected your \/?[\w-]{0,20} ?credential|Run \/design-login\b/i,
  },
];

/** A final API error the agent can be resumed from after a backoff (reference §4c, §9). */
export const TRANSIENT_API_ERRORS: readonly NamedPattern[] = [
  {
    name: "429 rejected",
    pattern:
      /API Error: Request rejected \(429\)|Server is temporarily limiting requests|API Error:? \(?429\b|rate_limit_error|Rate limited\. Press Enter to retry/i,
  },
  {
    name: "529 overloaded",
    pattern: /API Error:? \(?(?:Repeated )?529\b|overloaded_error|\bOverloaded\b/i,
  },
  { name: "server error", pattern: /API Error:? \(?5\d\d\b|api_error/i },
  {
    name: "connection lost",
    pattern:
      /Connection to the API was lost|Connection closed mid-response|Unable to connect to API|Request timed out|API Error: (?:Connection error|fetch failed)|ECONNRESET|ETIMEDOUT/i,
  },
  { name: "high load", pattern: /is experiencing high load/i },
];

/** The start of a notice the client draws as a `●` item: an API error, a login or billing problem. */
export const CLIENT_NOTICE =
  /^(?:API Error\b|Please run \/login|Invalid API key|Credit balance (?:is )?too low|Your org|Usage is paused|Failed to authenticate|OAuth token|Prompt is too long|Request timed out|Unable to connect to API|Server is temporarily limiting|Rate limited\. Press Enter|[\w. -]{1,20} is experiencing high load)/i;

/** A final API error, as the client writes it (`API Error: …`, older `API Error (529 …)`). */
export const API_ERROR_ITEM =
  /^API Error\b|^Request timed out\b|^Unable to connect to API\b|is experiencing high load|^Rate limited\. Press Enter to retry|^Server is temporarily limiting requests/i;

/** The old client asks for Enter itself: a bare Enter resumes it. */
export const PRESS_ENTER_TO_RETRY = /Press Enter to retry/i;

/** The spec's bracketed confirmations alone (`[y/N]`, `[yes/no]`). */
export const BRACKETED_CONFIRMATION = /\[(?:y\/n|yes\/no)\]/i;

/**
 * The specification's rule for the last 5 lines before typing (spec/error-recovery.md §5.1),
 * with both y/N spellings and the destructive commands a half-typed message may hold.
 */
export const LAST_LINES_REFUSAL =
  /\[y\/N\]|\[Y\/n\]|\[yes\/no\]|confirm|delete|overwrite|force[ -]push|push (?:-f|--force)\b|reset --hard|rm -rf|drop (?:table|database)\b/i;

/**
 * Placeholders the client shows in an empty input box, whole (read from the 2.1.328 binary:
 * `Try "…"` is one of eight suggestions about a file in the project; the rest are fixed texts).
 * Matched against the whole box, so a draft that merely starts like one (`Try "make release"
 * on the prod box`) is a draft.
 */
export const INPUT_PLACEHOLDERS: readonly RegExp[] = [
  /^Try "(?:fix lint errors|fix typecheck errors|how does \S{1,200} work\?|refactor \S{1,200}|how do I log an error\?|edit \S{1,200} to…|write a test for \S{1,200}|create a util logging\.py that…)"$/,
  /^Resend your message to try again$/,
  /^Once fixed, resend your message$/,
  /^Run \/rewind to go back$/,
  /^Type your message while the session is set up$/,
  /^Press up to (?:edit queued messages(?:, Enter to send them now)?|select a queued message to edit, or Enter to send them now|select a queued message, then Enter to edit it)$/,
];
