/** One line of a consent or lease dialog's list of capabilities. */
export interface CapabilityLine {
  /** Capability name, e.g. "click". */
  name: string;
  /** The same in plain words, e.g. "click inside the window". */
  description: string;
}
