export interface LibGeneratorSchema {
  name: string;
  type?: 'domain' | 'infra' | 'nest';
  infra?: string;
  description?: string;
}
