/**
 * Splits a stream of JSON lines (a transcript) into rows whose string values are cut to a bound,
 * working on bytes. A row of a 200 KB Write call becomes a few KiB before anything is decoded, so
 * no reader of a transcript ever holds, or leaves as garbage, a string as large as the file it
 * wrote: memory stays flat whatever the transcript holds.
 *
 * A raw newline always ends a row (JSON escapes the ones inside strings). A cut string ends with
 * `…[+N bytes]`, where N counts the bytes left out, so two long values that differ only in length
 * still differ. A row that lies whole in one chunk and has nothing cut is handed over as a view of
 * the chunk, without a copy.
 *
 * @module
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const NEWLINE = 0x0a;
const encoder = new TextEncoder();

/** Limits of a {@linkcode JsonRowSplitter}. */
export interface RowLimits {
  /** Bytes of each string value kept. */
  maxStringBytes: number;
  /** Rows whose kept bytes exceed this are dropped whole (and reported). */
  maxRowBytes: number;
  /** How many bytes of a row {@linkcode RowHandler.wanted} is shown. */
  headBytes: number;
}

/** What the splitter reports. */
export interface RowHandler {
  /** Whether a row that starts with `head` is read at all; one that is not is skipped unparsed. */
  wanted(head: Uint8Array): boolean;
  /** A row (with its strings cut), valid only during the call. */
  row(bytes: Uint8Array): void;
  /**
   * A row that was not read: unwanted (`torn` when it did not end in `}`: a partly written row) or
   * too long.
   */
  skipped(reason: "unwanted" | "torn" | "oversized"): void;
}

/** Feed it chunks with {@linkcode push}, then call {@linkcode end}. */
export class JsonRowSplitter {
  /** The row's bytes from earlier chunks, or from before a cut. */
  #out = new Uint8Array(1 << 16);
  #length = 0;
  /** The chunk being read, and where its bytes not yet copied to `#out` start. */
  #chunk: Uint8Array = new Uint8Array(0);
  #from = 0;
  /** The row's head was judged: keep reading it, or skip to its end. */
  #judged = false;
  #skipping = false;
  #oversized = false;
  #lastByte = -1;
  #inString = false;
  #kept = 0;
  #dropped = 0;
  /** The string's content so far ends in an odd run of backslashes (the next byte is escaped). */
  #odd = false;

  constructor(readonly handler: RowHandler, readonly limits: RowLimits) {}

  /** Takes the next bytes of the stream. The chunk may be reused once this returns. */
  push(chunk: Uint8Array): void {
    this.#chunk = chunk;
    this.#from = 0;
    let pos = 0;
    // The next newline at or after `pos`, looked up again only once `pos` has passed it: rows
    // hold many strings, and searching to the row's end for each one would be quadratic.
    let newline = -1;
    const nextNewline = () => {
      if (newline < pos && newline !== chunk.length) {
        newline = chunk.indexOf(NEWLINE, pos);
        if (newline < 0) newline = chunk.length;
      }
      return newline;
    };
    while (pos < chunk.length) {
      const end = nextNewline();
      if (this.#skipping) {
        if (end > pos) this.#lastByte = chunk[end - 1]!;
      } else if (this.#inString) {
        pos = this.#string(pos, end);
        continue;
      } else {
        const quote = chunk.indexOf(QUOTE, pos);
        if (quote >= 0 && quote < end) {
          pos = quote + 1;
          this.#inString = true;
          this.#kept = 0;
          this.#dropped = 0;
          this.#odd = false;
          this.#judgeAt(pos);
          continue;
        }
      }
      if (end === chunk.length) break;
      this.#endRow(end);
      pos = end + 1;
    }
    this.#flush(chunk.length);
    this.#chunk = new Uint8Array(0);
    this.#from = 0;
  }

  /** Ends the stream: a last row without a newline is still a row. */
  end(): void {
    if (this.#length > 0 || this.#skipping || this.#oversized) this.#endRow(0);
  }

  /** An open string from `pos` (the row ends at `end`); returns where to go on. */
  #string(pos: number, end: number): number {
    const chunk = this.#chunk;
    const quote = chunk.indexOf(QUOTE, pos);
    const stop = quote < 0 || quote > end ? end : quote;
    this.#content(pos, stop);
    this.#judgeAt(stop);
    if (stop === chunk.length) return stop;
    if (stop === end) {
      // A raw newline inside a string: a torn row. It ends here, and will not parse.
      this.#inString = false;
      this.#endRow(end);
      return end + 1;
    }
    if (this.#odd) {
      // An escaped quote is content.
      this.#content(stop, stop + 1);
      this.#odd = false;
      return stop + 1;
    }
    this.#closeString(stop);
    this.#inString = false;
    return stop + 1;
  }

  /** String content in `[from, to)`: kept up to the bound, counted beyond it. */
  #content(from: number, to: number): void {
    if (to <= from) return;
    const chunk = this.#chunk;
    const keep = Math.max(0, Math.min(to - from, this.limits.maxStringBytes - this.#kept));
    if (keep < to - from) {
      // The rest of this content is left out: copy what is kept, and go on past it.
      if (this.#dropped === 0) this.#flush(from + keep);
      this.#from = to;
    }
    this.#kept += keep;
    this.#dropped += to - from - keep;
    let run = 0;
    while (run < to - from && chunk[to - 1 - run] === BACKSLASH) run++;
    this.#odd = run === to - from ? this.#odd !== (run % 2 === 1) : run % 2 === 1;
  }

  /** Ends a string at the quote at `quote`: a cut one loses any half-kept escape, gains the marker. */
  #closeString(quote: number): void {
    if (this.#dropped === 0) return;
    if (!this.#oversized && !this.#skipping) {
      const out = this.#out;
      const start = Math.max(0, this.#length - this.#kept);
      let end = this.#length;
      let run = 0;
      while (end - run > start && out[end - 1 - run] === BACKSLASH) run++;
      if (run % 2 === 1) end--; // a lone backslash would escape the marker
      for (let i = Math.max(start, end - 5); i < end; i++) {
        if (out[i] !== BACKSLASH || out[i + 1] !== 0x75 /* u */) continue;
        let before = 0;
        while (i - 1 - before >= start && out[i - 1 - before] === BACKSLASH) before++;
        if (before % 2 === 0 && end - i < 6) end = i; // a \uXXXX cut short
        break;
      }
      this.#length = end;
      this.#copy(encoder.encode(`…[+${this.#dropped} bytes]`));
    }
    this.#from = quote;
  }

  /** Copies the chunk's bytes from `#from` to `to` into `#out`. */
  #flush(to: number): void {
    if (to > this.#from && !this.#skipping) this.#copy(this.#chunk.subarray(this.#from, to));
    this.#from = to;
  }

  #copy(bytes: Uint8Array): void {
    if (this.#oversized) return;
    const length = this.#length + bytes.length;
    if (length > this.limits.maxRowBytes) {
      this.#oversized = true;
      return;
    }
    if (length > this.#out.length) {
      const bigger = new Uint8Array(Math.max(length, this.#out.length * 2));
      bigger.set(this.#out.subarray(0, this.#length));
      this.#out = bigger;
    }
    this.#out.set(bytes, this.#length);
    this.#length = length;
  }

  /** Judges the row's head once `headBytes` of it are in (the chunk is read up to `pos`). */
  #judgeAt(pos: number): void {
    if (this.#judged || this.#skipping) return;
    if (this.#length + pos - this.#from < this.limits.headBytes) return;
    this.#judge(pos);
  }

  #judge(pos: number): void {
    this.#judged = true;
    const head = this.#length > 0 || this.#from >= pos
      ? (this.#flush(Math.max(pos, this.#from)), this.#out.subarray(0, this.#length))
      : this.#chunk.subarray(this.#from, pos);
    if (!this.handler.wanted(head)) {
      this.#skipping = true;
      this.#inString = false;
    }
  }

  /** Ends the row at `end` in the current chunk (0 at the end of the stream). */
  #endRow(end: number): void {
    if (!this.#skipping) {
      const chunk = this.#chunk;
      this.#lastByte = end > this.#from ? chunk[end - 1]! : this.#out[this.#length - 1] ?? -1;
      if (!this.#judged) this.#judge(end);
    }
    if (
      !this.#skipping && !this.#oversized &&
      this.#length + end - this.#from > this.limits.maxRowBytes
    ) {
      this.#oversized = true;
    }
    if (this.#oversized) this.handler.skipped("oversized");
    else if (this.#skipping) {
      // 0x0d: a row ended by CRLF.
      const whole = this.#lastByte === 0x7d || this.#lastByte === 0x0d;
      this.handler.skipped(whole ? "unwanted" : "torn");
    } else if (this.#length === 0) {
      if (end > this.#from) this.handler.row(this.#chunk.subarray(this.#from, end));
    } else {
      this.#flush(end);
      this.handler.row(this.#out.subarray(0, this.#length));
    }
    this.#length = 0;
    this.#from = end + 1;
    this.#judged = false;
    this.#skipping = false;
    this.#oversized = false;
    this.#inString = false;
    this.#lastByte = -1;
  }
}
