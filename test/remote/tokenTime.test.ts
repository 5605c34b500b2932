import { beforeAll, describe, expect, it } from "vitest";
import { BearerVerifier } from "../../src/remote/oauth.js";
import { AUDIENCE, ISSUER, makeIssuer, type TokenClaims } from "../support/remote.js";
import { scratchDir } from "../support/scratch.js";

// A token's time claims are judged by the server's clock (injected here, far from the real
// one, so nothing passes by the test machine's time): exp and iat required, iat not in the
// future beyond the skew, nbf honoured, and both now − iat and exp − now within the maximum
// lifetime, so a token "issued in the future" cannot stretch its life past the cap.

const NOW_S = Date.UTC(2031, 4, 6, 12, 0, 0) / 1000;
const MAX = 3600;
const SKEW = 60;

let sign: (c: TokenClaims) => Promise<string>;
let verifier: BearerVerifier;
let verifierFor: (skew: number) => BearerVerifier;

beforeAll(async () => {
  const issuer = await makeIssuer(scratchDir("token-time"));
  sign = issuer.sign;
  verifierFor = (skew) =>
    new BearerVerifier(
      {
        issuer: ISSUER,
        audience: AUDIENCE,
        jwks: issuer.jwksFile,
        maxLifetimeSeconds: MAX,
        clockSkewSeconds: skew,
      },
      () => NOW_S * 1000,
    );
  verifier = verifierFor(SKEW);
});

async function verdict(claims: TokenClaims, v = verifier): Promise<boolean> {
  return (await v.verify(`Bearer ${await sign({ sub: "agent", ...claims })}`)).ok;
}

describe("token time claims by the clock", () => {
  it("a fresh token within the lifetime passes", async () => {
    expect(await verdict({ iat: NOW_S, exp: NOW_S + 600 })).toBe(true);
    expect(await verdict({ iat: NOW_S - 100, exp: NOW_S + MAX - 100 })).toBe(true);
  });

  it("iat in the future: within the skew passes, beyond it is refused", async () => {
    expect(await verdict({ iat: NOW_S + SKEW, exp: NOW_S + SKEW + 600 })).toBe(true);
    expect(await verdict({ iat: NOW_S + SKEW + 1, exp: NOW_S + SKEW + 601 })).toBe(false);
    // The reported attack: issued a year ahead with a 10-minute life, and iat = exp a day ahead.
    expect(await verdict({ iat: NOW_S + 365 * 86_400, exp: NOW_S + 365 * 86_400 + 600 })).toBe(false);
    expect(await verdict({ iat: NOW_S + 86_400, exp: NOW_S + 86_400 })).toBe(false);
  });

  it("the skew is a setting", async () => {
    const strict = verifierFor(0);
    expect(await verdict({ iat: NOW_S + 1, exp: NOW_S + 600 }, strict)).toBe(false);
    expect(await verdict({ iat: NOW_S, exp: NOW_S + 600 }, strict)).toBe(true);
    const loose = verifierFor(300);
    expect(await verdict({ iat: NOW_S + 250, exp: NOW_S + 600 }, loose)).toBe(true);
  });

  it("exp − now beyond the maximum is refused even when exp − iat is not", async () => {
    // iat within the skew, exp − iat = MAX, so exp − now = MAX + 60: still refused.
    expect(await verdict({ iat: NOW_S + SKEW, exp: NOW_S + SKEW + MAX })).toBe(false);
    expect(await verdict({ iat: NOW_S, exp: NOW_S + MAX })).toBe(true);
    expect(await verdict({ iat: NOW_S, exp: NOW_S + MAX + 1 })).toBe(false);
  });

  it("now − iat beyond the maximum is refused", async () => {
    expect(await verdict({ iat: NOW_S - MAX, exp: NOW_S + 10 })).toBe(false);
    expect(await verdict({ iat: NOW_S - MAX + 10, exp: NOW_S + 10 })).toBe(true);
  });

  it("exp: expired beyond the skew is refused, within it passes", async () => {
    expect(await verdict({ iat: NOW_S - 600, exp: NOW_S - SKEW - 1 })).toBe(false);
    expect(await verdict({ iat: NOW_S - 600, exp: NOW_S - SKEW + 1 })).toBe(true);
  });

  it("nbf is honoured with the same skew", async () => {
    expect(await verdict({ iat: NOW_S, exp: NOW_S + 600, nbf: NOW_S + SKEW + 1 })).toBe(false);
    expect(await verdict({ iat: NOW_S, exp: NOW_S + 600, nbf: NOW_S + SKEW - 1 })).toBe(true);
  });

  it("exp and iat are required", async () => {
    expect(await verdict({ iat: null, exp: NOW_S + 600 })).toBe(false);
    expect(await verdict({ iat: NOW_S, exp: null })).toBe(false);
  });
});

describe("a token verified a moment ago", () => {
  it("is judged by the clock again on every request (it expires in the cache too)", async () => {
    let nowS = NOW_S;
    const issuer = await makeIssuer(scratchDir("token-cache"));
    const v = new BearerVerifier(
      {
        issuer: ISSUER,
        audience: AUDIENCE,
        jwks: issuer.jwksFile,
        maxLifetimeSeconds: MAX,
        clockSkewSeconds: SKEW,
      },
      () => nowS * 1000,
    );
    const token = `Bearer ${await issuer.sign({ sub: "agent", iat: NOW_S, exp: NOW_S + 30 })}`;
    expect((await v.verify(token)).ok).toBe(true);
    nowS += 20;
    expect((await v.verify(token)).ok).toBe(true);
    nowS += 100;
    expect(await v.verify(token)).toMatchObject({ ok: false, error: "invalid_token" });
  });
});
