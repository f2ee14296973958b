/**
 * The `event-emitter` variant: the handler emits `<scenario>.effect` through `@nestjs/event-emitter`
 * and a provider's `@OnEvent('<scenario>.effect', { async: true })` listener performs the side-effect
 * and awaits it, as that package's docs show — not improved: the listener starts on a later tick
 * (possibly before the response is written), nothing bounds how many run at once, a failure is only
 * logged by the package, and nothing waits for running listeners at shutdown.
 */
import { Injectable, type Type } from '@nestjs/common';
import { OnEvent } from '@nestjs/event-emitter';
import { runEffect } from './counters.js';

/** What the handler emits. */
export interface EffectEvent {
  scenario: string;
}

/** The event a scenario's `event-emitter` route emits. */
export function effectEventName(scenario: string): string {
  return `${scenario}.effect`;
}

/** A provider class listening for `<scenario>.effect`; it performs the side-effect, counted under `route`. */
export function effectListener(scenario: string, route: string, perform: () => Promise<number>): Type<unknown> {
  @Injectable()
  class EffectListener {
    @OnEvent(effectEventName(scenario), { async: true })
    async handle(_event: EffectEvent): Promise<void> {
      await runEffect(route, perform);
    }
  }
  Object.defineProperty(EffectListener, 'name', { value: `EffectListener_${scenario.replace(/\W/g, '_')}` });
  return EffectListener;
}
