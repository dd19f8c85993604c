import { DynamicModule, Module } from '@nestjs/common';
import { CommonAppModule } from '@defender/nest-common';
import { DefenderConfig } from './config';

export const DEFENDER_CONFIG = Symbol('DEFENDER_CONFIG');

@Module({})
export class AppModule {
  static forRoot(config: DefenderConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [CommonAppModule.forRoot('defender', config)],
      providers: [{ provide: DEFENDER_CONFIG, useValue: config }],
    };
  }
}
