// node --import ./test/win32/loader.mjs …  (inherited by worker threads through execArgv)
import { register } from "node:module";

register("./hooks.mjs", import.meta.url);
