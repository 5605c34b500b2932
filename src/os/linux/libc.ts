import koffi from "koffi";

/**
 * The one binding of glibc (libc.so.6) for every Linux part that needs a call Node does not
 * offer: the X11 backend (free, sysconf, SysV shared memory), the connection-owner proof
 * (netlink sockets), the lease broker (SO_PEERCRED, flock, sysconf), the workers' malloc tuning
 * and scheduling class, and the fault drills of the simulated desktop. Loaded lazily, once per
 * thread (koffi's types and functions belong to the isolate that declared them). Throws when the
 * library cannot be loaded (another C library, or not Linux); callers decide what that means.
 *
 * Never imported from the supervisor thread: a guard test walks its imports.
 */

export interface PeerCredBuffer {
  pid: number;
  uid: number;
  gid: number;
}

export interface Libc {
  free(p: bigint): void;
  sysconf(name: number): number | bigint;
  shmget(key: number, size: number, flags: number): number;
  shmat(id: number, addr: bigint | null, flags: number): bigint;
  shmdt(addr: bigint): number;
  shmctl(id: number, cmd: number, buf: bigint | null): number;
  socket(domain: number, type: number, protocol: number): number;
  send(fd: number, buf: Buffer, len: number, flags: number): number;
  recv(fd: number, buf: Buffer, len: number, flags: number): number;
  close(fd: number): number;
  /** getsockopt(fd, level, name, struct ucred *, socklen_t *) for SO_PEERCRED. */
  getsockoptUcred(fd: number, level: number, name: number, out: PeerCredBuffer, len: number[]): number;
  /** sizeof(struct ucred). */
  readonly ucredSize: number;
  flock(fd: number, op: number): number;
  strlen(s: null): number;
  mallopt(param: number, value: number): number;
  mallocTrim(pad: number): number;
  /** sched_setscheduler(pid, policy, &{ sched_priority }); pid 0 is the calling thread. */
  schedSetScheduler(pid: number, policy: number, priority: number): number;
}

let cached: Libc | null = null;

export function libc(): Libc {
  if (cached) return cached;
  const lib = koffi.load("libc.so.6");
  const UCred = koffi.struct("uiinspect_ucred", { pid: "int32", uid: "uint32", gid: "uint32" });
  const f = <T>(decl: string): T => lib.func(decl) as unknown as T;
  const mallopt = f<(p: number, v: number) => number>("int mallopt(int param, int value)");
  const mallocTrim = f<(pad: number) => number>("int malloc_trim(size_t pad)");
  koffi.struct("uiinspect_sched_param", { sched_priority: "int32" });
  const setScheduler = f<(pid: number, policy: number, param: { sched_priority: number }) => number>(
    "int sched_setscheduler(int pid, int policy, const uiinspect_sched_param *param)",
  );
  cached = {
    free: f("void free(void *p)"),
    sysconf: f("long sysconf(int name)"),
    shmget: f("int shmget(int key, size_t size, int flags)"),
    shmat: f("void *shmat(int id, void *addr, int flags)"),
    shmdt: f("int shmdt(void *addr)"),
    shmctl: f("int shmctl(int id, int cmd, void *buf)"),
    socket: f("int socket(int domain, int type, int protocol)"),
    send: f("long send(int fd, void *buf, size_t len, int flags)"),
    recv: f("long recv(int fd, void *buf, size_t len, int flags)"),
    close: f("int close(int fd)"),
    getsockoptUcred: f(
      "int getsockopt(int fd, int level, int name, _Out_ uiinspect_ucred *val, _Inout_ uint32_t *len)",
    ),
    ucredSize: koffi.sizeof(UCred),
    flock: f("int flock(int fd, int op)"),
    strlen: f("size_t strlen(void *s)"),
    mallopt: (p, v) => Number(mallopt(p, v)),
    mallocTrim: (pad) => Number(mallocTrim(pad)),
    schedSetScheduler: (pid, policy, priority) =>
      Number(setScheduler(pid, policy, { sched_priority: priority })),
  };
  return cached;
}
