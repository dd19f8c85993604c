/**
 * The store key of an indicator: `<recipe>|<defense-rules key>` (the key is the indicator id, or
 * `<id>/<svid>` for an indicator over every SVID). An indicator is (chamber, recipe, window, SVID,
 * statistic): runs of different recipes never share a chart, a baseline or limits.
 */
export function storeIndicatorKey(recipe: string, key: string): string {
  return storeKeyPrefix(recipe) + key;
}

/** What every store indicator key of a recipe starts with. */
export function storeKeyPrefix(recipe: string): string {
  return `${recipe}|`;
}
