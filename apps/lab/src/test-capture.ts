/** A writable stream that keeps what is written to it, for the tests that drive `lab()`. */
import { Writable } from 'node:stream';

export class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}
