export { defenderIdSchema, chamberKeySchema, subjectTokenSchema } from './ids';
export { isoTime as isoTimeSchema } from './parse';
