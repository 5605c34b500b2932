/**
 * `p`, or a rejection with `onTimeout()` once `ms` pass first. The timer is cleared either way,
 * so a settled promise never keeps the event loop alive. Pure: importable from every thread.
 */
export function withTimeout<T>(p: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(onTimeout()), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}
