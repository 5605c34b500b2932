import koffi from "koffi";
import { uiError } from "../../shared/errors.js";
import type { XConnection } from "./xconn.js";

/**
 * Where our XTest events go. A core XTest request is routed through the XTEST slave device of
 * this client's pointer (its "ClientPointer") or of the keyboard paired with it, and from there
 * through its master to the focus or the window under the pointer (xserver Xext/xtest.c). Another
 * client can take that route away without any core grab showing: `XIGrabDevice` on
 * "Virtual core XTEST keyboard" or "… XTEST pointer" floats the slave for the grab, and every
 * event of ours then goes to the grabbing client only, while a core GrabKeyboard / GrabPointer
 * probe on the masters still succeeds; `XISetClientPointer` can point our client at another
 * master. So, from the server's own device list (XIQueryDevice), before each key or press: our
 * client pointer is the virtual core pointer, and the two virtual core XTEST slaves exist once
 * each, enabled and attached to the virtual core pointer and keyboard. The X server gives the
 * virtual core pointer and keyboard the device ids 2 and 3, and no client can rename a device.
 */

const VCP = 2;
const VCK = 3;
const XI_SLAVE_POINTER = 3;
const XI_SLAVE_KEYBOARD = 4;
const XI_ALL_DEVICES = 0;
/** sizeof(XIDeviceInfo) on LP64: int, (pad), char *, int ×4, XIAnyClassInfo **. */
const DEVICE_INFO_SIZE = 40;

interface DeviceInfo {
  deviceid: number;
  name: string | null;
  use: number;
  attachment: number;
  enabled: number;
}

const announced = new WeakSet<XConnection>();

/** XI2 requests need the client to have said which version it speaks, once per connection. */
export function announce(x: XConnection): void {
  const xi = x.n.xi;
  if (!xi || announced.has(x)) return;
  xi.XIQueryVersion(x.dpy, [2], [0]);
  announced.add(x);
}

/**
 * Throws input_grabbed unless our XTest events reach the virtual core devices (see above). One
 * XIQueryDevice and one XIGetClientPointer on the Xlib connection that injects: meant to run under
 * the server grab of the event it clears, so nothing can change before the event.
 */
export function requireXTestRoute(x: XConnection): void {
  const xi = x.n.xi;
  if (!xi) throw uiError("platform_unavailable", "libXi (XInput 2) is not installed.");
  announce(x);
  const cp = [0];
  if (xi.XIGetClientPointer(x.dpy, 0, cp) === 0 || cp[0] !== VCP)
    throw uiError("input_grabbed", "Another client redirected our pointer to another device.");
  const count = [0];
  const list = xi.XIQueryDevice(x.dpy, XI_ALL_DEVICES, count);
  if (list === null || list === 0n)
    throw uiError("platform_unavailable", "The X input devices cannot be read.");
  const devices: DeviceInfo[] = [];
  try {
    for (let i = 0; i < (count[0] ?? 0); i++)
      devices.push(koffi.decode(list, i * DEVICE_INFO_SIZE, xi.DeviceInfo) as DeviceInfo);
  } finally {
    xi.XIFreeDeviceInfo(list);
  }
  x.checkAlive();
  const attached = (name: string, use: number, master: number) => {
    const named = devices.filter((d) => d.name === name);
    const [only] = named;
    return (
      named.length === 1 &&
      only !== undefined &&
      only.enabled !== 0 &&
      only.use === use &&
      only.attachment === master
    );
  };
  if (
    !attached("Virtual core XTEST pointer", XI_SLAVE_POINTER, VCP) ||
    !attached("Virtual core XTEST keyboard", XI_SLAVE_KEYBOARD, VCK)
  )
    throw uiError("input_grabbed", "Another client holds our input devices (an XInput device grab).");
}
