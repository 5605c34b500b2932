/**
 * How many shots a capture worker works on at once; the rest wait their turn. Each shot in
 * flight holds a frame (1.4 MB at 800×600), a deflate stream and its output, and shots overlap
 * while they await the display server: with no bound, a burst of 64 screenshot calls held 64
 * of each at once, and the allocator kept that high water for good (two 64 MiB malloc arenas
 * fully resident after one burst, docs/benchmarks.md). A few in flight keep the display
 * server's round trips overlapped. The supervisor sends no more than this many at once, in
 * turns by identity (src/shared/fairShare.ts), so the worker's own gate (the same class, one
 * queue) is the backstop, not the queue.
 */
export const SHOTS_IN_FLIGHT = 4;
