/** The worker side of the IPC channel: a message to the parent, resolved once it is on its way. */

/** Sends `message` to the parent process (nothing when there is none). */
export function sendToParent(message: object): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) {
      resolve();
      return;
    }
    process.send(message, undefined, undefined, () => resolve());
  });
}
