import { describe, expect, it } from "vitest";
import { detachOrphanSegments, stillMapped } from "../../src/platforms/x11/shmOrphans.js";
import { leaveOrphanSegments, takeOrphanSegments } from "../../src/supervisor/hosting/nativeSegments.js";

const MAPS = [
  "55d0c0a00000-55d0c0a21000 r--p 00000000 08:01 1835021                    /usr/bin/node",
  "7f3a10000000-7f3a101d4000 rw-s 00000000 00:01 32769                      /SYSV00000000 (deleted)",
  "7f3a20000000-7f3a201d4000 rw-s 00000000 00:01 32770                      /SYSV00000000 (deleted)",
  "7f3a30000000-7f3a30021000 rw-p 00000000 00:00 0 ",
  "7f3a40000000-7f3a40100000 rw-s 00000000 00:05 32771                      /dev/shm/other",
].join("\n");
const at = (hex: string) => BigInt(`0x${hex}`).toString();

describe("orphaned MIT-SHM segments (x11)", () => {
  it("detaches only a System V mapping that starts at the address with the reported shmid", () => {
    const orphans = [
      { shmid: 32769, addr: at("7f3a10000000") }, // it
      { shmid: 99999, addr: at("7f3a20000000") }, // another segment there now
      { shmid: 0, addr: at("7f3a30000000") }, // anonymous memory there now
      { shmid: 32771, addr: at("7f3a40000000") }, // a shared file, not System V
      { shmid: 32770, addr: at("7f3a20001000") }, // not where a mapping starts
    ];
    expect(stillMapped(MAPS, orphans)).toEqual([orphans[0]]);
    const detached: bigint[] = [];
    const n = {
      shmdt: (addr: bigint) => {
        detached.push(addr);
        return 0;
      },
    };
    expect(detachOrphanSegments(n, orphans, () => MAPS)).toBe(1);
    expect(detached).toEqual([0x7f3a10000000n]);
    expect(detachOrphanSegments(n, [], () => MAPS)).toBe(0);
  });

  it("the supervisor hands a kind's orphans to its next worker once, the newest kept", () => {
    leaveOrphanSegments("capture", [{ shmid: 1, addr: "1000" }]);
    leaveOrphanSegments("capture", []);
    leaveOrphanSegments("uia", [{ shmid: 2, addr: "2000" }]);
    expect(takeOrphanSegments("capture")).toEqual([{ shmid: 1, addr: "1000" }]);
    expect(takeOrphanSegments("capture")).toEqual([]);
    for (let i = 0; i < 20; i++) leaveOrphanSegments("capture", [{ shmid: i, addr: String(4096 + i) }]);
    const kept = takeOrphanSegments("capture");
    expect(kept).toHaveLength(16);
    expect(kept[0]?.shmid).toBe(4);
    expect(takeOrphanSegments("uia")).toEqual([{ shmid: 2, addr: "2000" }]);
  });
});
