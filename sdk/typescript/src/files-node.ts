// Node's local file system for Files.download and Files.upload (the LocalFiles of @kubox/sdk).

import { createReadStream, createWriteStream } from "node:fs";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";

import type { LocalFiles } from "./files.js";

/** nodeFiles streams local files with node:fs. */
export const nodeFiles: LocalFiles = {
  async write(dest, data) {
    await pipeline(Readable.from(data), createWriteStream(dest));
  },
  read(src) {
    return createReadStream(src);
  },
};
