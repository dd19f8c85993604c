/** The Nest token of the processing of chambers that membership drives (libs/membership `ChamberWork`). */
export const CHAMBER_WORK = Symbol('CHAMBER_WORK');
