import { tileHashes } from "./pixels.js";
import { pngFrameRows } from "./png.js";

/**
 * Tile hashes of screenshot_window's frames (tiles "later"), computed only when asked. A
 * frame's tiles are read only by a visual wait that later asks what changed since it, yet
 * hashing them cost about 0.6 ms of CPU on every 800×600 shot, first before the answer and then
 * right after it, where on two cores it competed with the supervisor's work on that answer. So
 * a shot keeps a copy of its PNG here (about 60 KB for a UI frame) under its frame hash, and
 * capture.tiles inflates that PNG back to the frame's rows and hashes their tiles: the same rows
 * the tiles would have been hashed from (no grid is drawn on a frame whose tiles come later), so
 * the same tiles.
 *
 * Each copy is kept for its owner: the identity it was answered to and the process instance
 * the checks verified. Only that owner's lookup finds it (the same pixels shot for another
 * identity are another entry), and capture.forget drops an identity's or an instance's copies
 * when its grant ends, so no image of a revoked identity stays here.
 *
 * Bounded by bytes, oldest out: what is gone (forgotten, evicted, or lost with a restarted
 * worker) is answered null, and the wait then reports the whole region as changed, as for a
 * frame it never saw. Tiles once hashed are kept in place of their PNG (a few KB instead of tens).
 */

/** Whose a kept frame is: the identity's key and the process instance's key (instanceKey). */
export interface KeptOwner {
  readonly client: string;
  readonly instance: string;
}

/** What capture.forget drops: every kept frame matching each field that is not null. */
export interface ForgetMatch {
  readonly client: string | null;
  readonly instance: string | null;
}

/**
 * A shot's right to keep its PNG, opened when the shot's message arrives: a forget that comes
 * while the shot is still working (its grant ended meanwhile) voids what it matches, so the
 * frame of an identity revoked mid-shot is not kept after the revocation.
 */
export interface KeepSlot {
  keep(instance: string, frameHash: string, png: Uint8Array): void;
  close(): void;
}

interface Open {
  readonly client: string;
  readonly forgotten: ForgetMatch[];
}

const NO_SLOT: KeepSlot = { keep: () => undefined, close: () => undefined };

export class LaterTiles {
  private readonly kept = new Map<string, Kept>();
  private readonly open = new Set<Open>();
  private keptBytes = 0;

  constructor(private readonly maxBytes = 6 * 1024 * 1024) {}

  /** A slot for a shot answered to `client`; null (no identity named) keeps nothing. */
  slot(client: string | null): KeepSlot {
    if (client === null) return NO_SLOT;
    const o: Open = { client, forgotten: [] };
    this.open.add(o);
    return {
      keep: (instance, frameHash, png) => {
        if (!this.open.has(o)) return;
        const owner = { client, instance };
        if (o.forgotten.some((m) => matches(m, owner))) return;
        this.later(owner, frameHash, png);
      },
      close: () => {
        this.open.delete(o);
      },
    };
  }

  /** Keeps a copy of `png` (the PNG the capture worker answered, no grid on it) for its owner. */
  later(owner: KeptOwner, frameHash: string, png: Uint8Array): void {
    this.put(keyOf(owner, frameHash), { owner, png: png.slice() });
  }

  /** The tiles of the owner's frame with this hash, or null (never kept for it, gone, not our PNG). */
  get(owner: KeptOwner, frameHash: string): Uint32Array | null {
    const key = keyOf(owner, frameHash);
    const k = this.kept.get(key);
    if (!k) return null;
    const tiles = k.tiles ?? tilesOfPng(k.png);
    if (!tiles) {
      this.drop(key);
      return null;
    }
    // Most recently asked last: the least recent goes first.
    this.put(key, { owner, tiles });
    return tiles;
  }

  /** Drops every kept frame `match` names, and voids the shots in flight it names; how many went. */
  forget(match: ForgetMatch): number {
    for (const o of this.open)
      if (match.client === null || match.client === o.client) o.forgotten.push(match);
    let dropped = 0;
    for (const [key, k] of this.kept) {
      if (!matches(match, k.owner)) continue;
      this.drop(key);
      dropped += 1;
    }
    return dropped;
  }

  /** How many frames are kept (tests, memory accounting). */
  get size(): number {
    return this.kept.size;
  }

  private put(key: string, k: Kept): void {
    this.drop(key);
    const bytes = sizeOf(k);
    if (bytes > this.maxBytes) return;
    this.kept.set(key, k);
    this.keptBytes += bytes;
    for (const oldest of this.kept.keys()) {
      if (this.keptBytes <= this.maxBytes) break;
      this.drop(oldest);
    }
  }

  private drop(key: string): void {
    const old = this.kept.get(key);
    if (!old) return;
    this.kept.delete(key);
    this.keptBytes -= sizeOf(old);
    // What is no longer kept is not left readable in memory that is freed later.
    old.png?.fill(0);
  }
}

type Kept = { owner: KeptOwner } & (
  | { png: Uint8Array; tiles?: undefined }
  | { tiles: Uint32Array; png?: undefined }
);

/** Keys cannot collide: the owner's keys are hex (the protocol's schemas), the separator is not. */
function keyOf(owner: KeptOwner, frameHash: string): string {
  return `${owner.client}:${owner.instance}:${frameHash}`;
}

function matches(m: ForgetMatch, owner: KeptOwner): boolean {
  return (
    (m.client === null || m.client === owner.client) && (m.instance === null || m.instance === owner.instance)
  );
}

function sizeOf(k: Kept): number {
  return k.tiles ? k.tiles.byteLength : (k.png?.byteLength ?? 0);
}

/** The tile hashes of the frame one of our PNGs holds; null when it is not one of ours. */
function tilesOfPng(png: Uint8Array | undefined): Uint32Array | null {
  const frame = png ? pngFrameRows(png) : null;
  if (!frame) return null;
  const stride = frame.width * 3 + 1;
  return tileHashes({
    width: frame.width,
    height: frame.height,
    channels: 3,
    data: frame.rows.subarray(1),
    stride,
  });
}
