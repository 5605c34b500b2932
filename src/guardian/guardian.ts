import { type HeldEntry, isKeyboardState, type KeyboardStateEntry } from "../shared/pressLedger.js";
import { entryKey } from "./entries.js";

/**
 * Undoes held entries on one platform (X11: XTest key/button ups and the keymap; Win32:
 * SendInput ups; the simulated desktop: effects lines). Skips what is already up or no longer
 * ours (a keycode someone else remapped since), and never throws: a failed release must not
 * stop the others.
 */
export interface Releaser {
  /** Entries newest first: keys are let go in the reverse order they went down. */
  release(entries: readonly HeldEntry[]): Promise<void>;
  close(): void;
}

/**
 * Keeps the keyboard changes (remaps, auto-repeat turned off) on disk so a run that died with its
 * guardian can be repaired by the next one.
 */
export interface RemapJournal {
  write(changes: readonly KeyboardStateEntry[]): void;
}

/**
 * The guardian's record: per source (one input worker's lifetime), what is held right now, in
 * the order it was taken. Sources are released as a whole when their worker is gone; a released
 * source is dead for good (a late record from it is ignored: its worker can press nothing more).
 */
export class Guardian {
  private readonly held = new Map<string, HeldEntry[]>();
  private readonly dead = new Set<string>();
  /** Releases run one at a time, in the order they were asked for. */
  private chain: Promise<void> = Promise.resolve();
  /** The server's pipe closed: no source may hold anything more, known or not. */
  private ending = false;
  /** What was held when the pipe closed, released once more by `settle`. */
  private final: HeldEntry[] = [];

  constructor(
    private readonly releaser: Releaser,
    private readonly journal: RemapJournal | null = null,
  ) {}

  /** Records entries a source is about to hold; false when the source was already released. */
  hold(source: string, entries: readonly HeldEntry[]): boolean {
    if (this.ending || this.dead.has(source)) return false;
    const list = this.held.get(source) ?? [];
    for (const e of entries) {
      const k = entryKey(e);
      const i = list.findIndex((x) => entryKey(x) === k);
      if (i >= 0) list.splice(i, 1);
      list.push(e);
    }
    this.held.set(source, list);
    if (entries.some(isKeyboardState)) this.persist();
    return true;
  }

  /** Forgets entries the source has undone itself. */
  released(source: string, entries: readonly HeldEntry[]): void {
    const list = this.held.get(source);
    if (!list) return;
    const gone = new Set(entries.map(entryKey));
    const rest = list.filter((x) => !gone.has(entryKey(x)));
    if (rest.length === 0) this.held.delete(source);
    else this.held.set(source, rest);
    if (entries.some(isKeyboardState)) this.persist();
  }

  /** Undoes everything the source still holds and refuses its later records. */
  releaseSource(source: string): Promise<void> {
    this.dead.add(source);
    const list = this.held.get(source) ?? [];
    this.held.delete(source);
    return this.run(list);
  }

  /** Undoes everything every source holds (shutdown, or the server's pipe closed). */
  releaseAll(): Promise<void> {
    const all = [...this.held.keys()];
    for (const s of all) this.dead.add(s);
    const list = all.flatMap((s) => this.held.get(s) ?? []);
    this.held.clear();
    return this.run(list);
  }

  /**
   * The server's pipe closed: everything held is released and every later record refused, from
   * any source, including one that held nothing at this moment (a worker between two remaps of a
   * text would otherwise remap once more after this release, with no guardian left to undo it).
   * The journal keeps the keyboard changes until `settle` has released them again.
   */
  shutdown(): Promise<void> {
    this.ending = true;
    const all = [...this.held.keys()];
    for (const s of all) this.dead.add(s);
    this.final = all.flatMap((s) => this.held.get(s) ?? []);
    this.held.clear();
    return this.run(this.final, false);
  }

  /**
   * After the workers' connections closed (or their bound passed): the shutdown's entries once
   * more. A worker told "ok" just before the pipe closed may have made its change after the first
   * pass looked (a remap not yet written is skipped as not ours); releases skip what is already
   * undone, so a second pass costs nothing where there is nothing left.
   */
  settle(): Promise<void> {
    const list = this.final;
    this.final = [];
    return this.run(list, true);
  }

  /** Entries currently held (for tests and the state journal). */
  snapshot(): HeldEntry[] {
    return [...this.held.values()].flat();
  }

  private run(list: readonly HeldEntry[], journal = true): Promise<void> {
    const newestFirst = [...list].reverse();
    const step = this.chain.then(async () => {
      if (newestFirst.length > 0) await this.releaser.release(newestFirst);
      if (journal && newestFirst.some(isKeyboardState)) this.persist();
    });
    this.chain = step.catch(() => undefined);
    return this.chain;
  }

  private persist(): void {
    if (!this.journal) return;
    try {
      this.journal.write(this.snapshot().filter(isKeyboardState));
    } catch {
      // A journal that cannot be written loses only the repair of a later crashed run.
    }
  }
}
