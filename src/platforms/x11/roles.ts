/**
 * AT-SPI2 roles → the common role vocabulary. The map is shared with every backend and with
 * docs/roles.md (src/shared/roles.ts); these names stay for the X11 code and its tests.
 */
export {
  ATSPI_ROLES as ATSPI_ROLE_MAP,
  mapAtspiRole,
  ROLES as COMMON_ROLES,
  type Role as CommonRole,
} from "../../shared/roles.js";
