/**
 * Classifying a failure of an autonomous loop (spec/handle-failure.md Step 3) as a code,
 * architecture or process error. The rules are data, checked in order: architecture first (a
 * layering violation can mention code words), then code, then process. Each result names the
 * rule that matched; when none does, the failure is a process error and says so. Pure.
 *
 * @module
 */

/** The three kinds of the specification. */
export type ErrorType = "code" | "architecture" | "process";

/** One rule. */
export interface ClassifyRule {
  type: ErrorType;
  name: string;
  pattern: RegExp;
}

/** The rules, in the order they are tried. */
export const CLASSIFY_RULES: readonly ClassifyRule[] = [
  // Architecture: layering, cross-layer calls, cycles, naming conventions.
  {
    type: "architecture",
    name: "layering violation",
    pattern:
      /分层|layer(?:ing|ed)? (?:violation|rule)|\blayer\b.*\bcalls?\b.*\blayer\b|层直接调用|violat\w* (?:the )?(?:layer|architecture)/i,
  },
  { type: "architecture", name: "cross-layer call", pattern: /跨层|cross[- ]layer/i },
  {
    type: "architecture",
    name: "circular dependency",
    pattern:
      /循环依赖|circular (?:dependency|import)|import cycle|dependency cycle|cyclic dependenc/i,
  },
  {
    type: "architecture",
    name: "naming convention",
    pattern: /命名规范|naming convention|naming rule/i,
  },
  {
    type: "architecture",
    name: "architecture rule",
    pattern: /架构|architecture (?:violation|guardrail|check failed)/i,
  },
  // Code: syntax, types, imports, runtime; compiler and runtime messages of common languages.
  {
    type: "code",
    name: "syntax error",
    pattern: /语法错误|SyntaxError|syntax error|unexpected token|ParseError|expected ['"`;]/i,
  },
  {
    type: "code",
    name: "type error",
    pattern:
      /类型错误|TypeError|\bTS\d{4}\b|type mismatch|incompatible types|mismatched types|is not assignable to/i,
  },
  {
    type: "code",
    name: "undefined name",
    pattern:
      /未定义|\bundefined:|NameError|ReferenceError|is not defined|cannot find symbol|undeclared|error\[E0425\]|cannot find value/i,
  },
  {
    type: "code",
    name: "import error",
    pattern:
      /导入错误|ImportError|ModuleNotFoundError|Cannot find module|cannot find package|unresolved import|error\[E0432\]|package .* is not in/i,
  },
  {
    type: "code",
    name: "compile error",
    pattern:
      /编译错误|compil(?:e|ation) (?:error|failed)|error\[E\d{4}\]|\berror TS\d+|build failed/i,
  },
  {
    type: "code",
    name: "runtime error",
    pattern:
      /运行时错误|Traceback \(most recent call last\)|panic(?:ked)?:|NullPointerException|segmentation fault|Uncaught \w*Error|Exception in thread/i,
  },
  {
    type: "code",
    name: "test failure",
    pattern: /\bFAIL(?:ED)?\b.*test|test(?:s)? failed|assertion ?error|AssertionError/i,
  },
  // Process: preconditions, dependencies, resources, permissions, time.
  { type: "process", name: "precondition not met", pattern: /前置条件|precondition|prerequisite/i },
  {
    type: "process",
    name: "dependency failed",
    pattern: /依赖.*失败|dependency (?:failed|unavailable)|skill .*failed|upstream .*failed/i,
  },
  {
    type: "process",
    name: "resource unavailable",
    pattern:
      /资源不可用|resource (?:unavailable|busy)|ENOSPC|no space left|out of memory|ECONNREFUSED|service unavailable/i,
  },
  {
    type: "process",
    name: "permission denied",
    pattern: /权限|permission denied|EACCES|EPERM|forbidden|\b403\b/i,
  },
  { type: "process", name: "timeout", pattern: /超时|timed? ?out|ETIMEDOUT|deadline exceeded/i },
  { type: "process", name: "rate limit", pattern: /限速|rate.?limit|\b429\b|too many requests/i },
];

/** A classification and the rule that decided it. */
export interface Classified {
  type: ErrorType;
  rule: string;
}

/** Classifies an error text; `override` (from --type) wins. */
export function classifyError(text: string, override?: ErrorType): Classified {
  if (override) return { type: override, rule: "given with --type" };
  const rule = CLASSIFY_RULES.find((r) => r.pattern.test(text));
  return rule
    ? { type: rule.type, rule: rule.name }
    : { type: "process", rule: "no rule matched; process by default" };
}
