import { DynamicModule, Module } from '@nestjs/common';
import { CommonAppModule } from '@defender/nest-common';
import { ControllerConfig } from './config';

export const CONTROLLER_CONFIG = Symbol('CONTROLLER_CONFIG');

@Module({})
export class AppModule {
  static forRoot(config: ControllerConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [CommonAppModule.forRoot('assignment-controller', config)],
      providers: [{ provide: CONTROLLER_CONFIG, useValue: config }],
    };
  }
}
