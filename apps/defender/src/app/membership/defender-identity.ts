import { Injectable } from '@nestjs/common';

/**
 * Who this process is in the cluster, once its stable ID is claimed: written by membership, read by
 * processing to fence its writes (kept apart so neither service depends on the other).
 */
@Injectable()
export class DefenderIdentity {
  private id: string | undefined;
  private generation = 0;
  private mapChambers: ReadonlySet<string> = new Set();
  private lowestInMap = false;

  set(defenderId: string, generation: number): void {
    this.id = defenderId;
    this.generation = generation;
  }

  clear(): void {
    this.id = undefined;
  }

  /** The chambers of the applied map, and whether we are its lowest defender ID (see below). */
  setMap(chambers: ReadonlySet<string>, lowestDefender: string | undefined): void {
    this.mapChambers = chambers;
    this.lowestInMap = lowestDefender !== undefined && lowestDefender === this.id;
  }

  /** Whether `chamber` is in the applied map (owned by some defender). */
  inMap(chamber: string): boolean {
    return this.mapChambers.has(chamber);
  }

  /**
   * The lowest defender ID of the map dead-letters notifications of chambers no defender owns
   * (publications are deduplicated, so a moment of overlap during a map change is harmless).
   */
  handlesUnknownChambers(): boolean {
    return this.lowestInMap;
  }

  defenderId(): string | undefined {
    return this.id;
  }

  /** Generation of our stable-ID claim (see ownerEpoch in @defender/membership). */
  claimGeneration(): number {
    return this.generation;
  }
}
