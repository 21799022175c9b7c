export declare const HONO_UPSTASH_TARGET_BYTES: number;
export interface BundleEntry {
  name: string;
  file: string;
  what: string;
  external?: string[];
}
export declare const ENTRIES: readonly BundleEntry[];
export interface BundleSize {
  minifiedBytes: number;
  gzipBytes: number;
  byPackage: { name: string; bytes: number }[];
  /** The minified bundle itself. */
  text: string;
}
export declare function measureEntry(entry: Pick<BundleEntry, 'file' | 'external'>): Promise<BundleSize>;
