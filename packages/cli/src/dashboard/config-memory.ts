/**
 * What the dashboard remembers of each limiter's configuration document, to tell a document the store lost (a Redis
 * without persistence restarted empty: the key is simply gone) from one an operator deleted (a tombstone, written
 * by `sluice config clear` and core's deleteLimiterConfig). Instances running watchConfig keep the last
 * configuration they applied when the document is lost; the dashboard shows the loss and can write the document it
 * last read back, its deny list included (into the source's own deny structure where it has one: a store restarted
 * empty lost that too). It remembers what it read while it ran: a dashboard started after the loss has nothing to
 * show or restore (`sluice config import` of an export does).
 */
import { SluiceError } from '@sluice/core';
import { replaceDenyEntries, type ConfigSource, type LimiterConfig } from '@sluice/core/config';

/** A document the store lost: the one the dashboard last read, which instances that applied it keep. */
export interface LostConfig {
  readonly revision: number;
  readonly updatedAt: number;
  /** Its deny entries (0 when it had no list). */
  readonly denyEntries: number;
}

export class ConfigMemory {
  private readonly seen = new Map<string, LimiterConfig>();

  /** The names with a remembered document: listed even once the store no longer holds them. */
  names(): string[] {
    return [...this.seen.keys()];
  }

  /**
   * Records a read of `name`: `document` as read (null when none is stored; a tombstone is a document). Answers the
   * lost document when none is stored but one was remembered (no tombstone came in between).
   */
  recordRead(name: string, document: LimiterConfig | null): LostConfig | undefined {
    if (document === null) {
      const last = this.seen.get(name);
      return last === undefined ? undefined : { revision: last.revision, updatedAt: last.updatedAt, denyEntries: last.deny?.length ?? 0 };
    }
    if (document.deleted === true) this.seen.delete(name);
    else this.seen.set(name, document);
    return undefined;
  }

  /**
   * Writes the remembered document back, only while none is stored (compare and set over "none"): another write in
   * between wins and nothing is restored. Returns what was written.
   */
  async restore(source: ConfigSource, name: string): Promise<LimiterConfig> {
    const document = this.seen.get(name);
    if (document === undefined) {
      throw new SluiceError(
        'INVALID_OPTION',
        `the dashboard has no copy of the configuration of ${JSON.stringify(name)} to restore (it keeps what it read while running); import an export (sluice config import)`,
      );
    }
    // Where the source keeps the deny list in a structure of its own, the document goes without it, and the entries
    // after it, once the document is restored (so nothing is written when another write came first).
    const { deny, ...withoutDeny } = document;
    const text = JSON.stringify(source.deny === undefined ? document : withoutDeny);
    let restored = false;
    if (source.replace !== undefined) restored = await source.replace(name, 0, text);
    else if ((await source.read(name)) == null) {
      await source.write(name, text);
      restored = true;
    }
    if (!restored) {
      throw new SluiceError(
        'INVALID_OPTION',
        `a configuration of ${JSON.stringify(name)} is stored again (written since the loss); nothing was restored`,
      );
    }
    if (source.deny !== undefined) await replaceDenyEntries(source, name, deny ?? []);
    return document;
  }
}
