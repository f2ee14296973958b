import { BadRequestException, Body, ConflictException, Controller, Delete, Get, HttpCode, Inject, NotFoundException, Param, Post, Query, UseGuards, type CanActivate, type Type } from '@nestjs/common';
import type { DeadLetterPage, DeadLetterRecord, RedriveResult } from '../../core/dead-letter-store.interface';
import { DeferredWorkConfigError } from '../../core/errors/deferred-work-config.error';
import { RedriveInProgressError } from '../../core/errors/redrive-in-progress.error';
import { DeferredWork } from '../deferred-work.service';
import { filterOf, queryOf, redriveOf } from './dead-letters-query';

/** Options of {@link deadLettersController}. */
export interface DeadLettersControllerOptions {
  /** The guards every route of the controller runs (at least one: it can redrive and purge). */
  guards: Array<Type<CanActivate> | CanActivate>;
  /** Its path. Default `'dead-letters'`. */
  path?: string;
}

/**
 * A controller over the dead-letter store, for the app to mount itself behind its own guard (never
 * registered by the library):
 *
 * ```ts
 * @Module({ controllers: [deadLettersController({ guards: [AdminGuard], path: 'admin/dead-letters' })] })
 * ```
 *
 * `GET /` (query `sink`, `reason`, `code`, `from`, `to`, `limit`, `after`) lists, `GET /count` counts,
 * `GET /:id` reads one, `POST /redrive` (`{ ids }` or `{ filter }`, `dryRun`, `perSecond`) redrives
 * (409 while another redrive runs), `DELETE /:id` discards one, `POST /purge` (`{ filter }`) purges.
 */
export function deadLettersController(options: DeadLettersControllerOptions): Type<unknown> {
  if (!options || !Array.isArray(options.guards) || options.guards.length === 0) {
    throw new DeferredWorkConfigError(
      'deadLettersController.guards',
      'no guard given: the controller can redrive and purge dead letters',
      'Pass deadLettersController({ guards: [YourAdminGuard] }) with the guard that protects your admin routes.',
    );
  }

  @Controller(options.path ?? 'dead-letters')
  @UseGuards(...options.guards)
  class DeadLettersController {
    constructor(@Inject(DeferredWork) private readonly work: DeferredWork) {}

    @Get()
    list(@Query() query: Record<string, unknown>): Promise<DeadLetterPage> {
      return this.work.listDeadLetters(queryOf(query));
    }

    @Get('count')
    async count(@Query() query: Record<string, unknown>): Promise<{ count: number }> {
      return { count: await this.work.countDeadLetters(filterOf(query)) };
    }

    @Get(':id')
    async get(@Param('id') id: string): Promise<DeadLetterRecord> {
      const record = await this.work.getDeadLetter(id);
      if (!record) throw new NotFoundException(`No dead letter has the id ${JSON.stringify(id)}`);
      return record;
    }

    @Post('redrive')
    @HttpCode(200)
    async redrive(@Body() body: Record<string, unknown>): Promise<RedriveResult> {
      const { selector, dryRun, perSecond } = redriveOf(body);
      try {
        return await this.work.redriveDeadLetters(selector, { dryRun, perSecond });
      } catch (error) {
        if (error instanceof RedriveInProgressError) throw new ConflictException(error.message);
        throw error;
      }
    }

    @Delete(':id')
    async discard(@Param('id') id: string): Promise<{ discarded: number }> {
      return { discarded: await this.work.discardDeadLetters([id]) };
    }

    @Post('purge')
    @HttpCode(200)
    async purge(@Body() body: Record<string, unknown>): Promise<{ purged: number }> {
      if (typeof body?.filter !== 'object' || body.filter === null) {
        throw new BadRequestException('Give { "filter": { "sink", "reason", "code", "from", "to" } } ({ "filter": {} } purges every dead letter)');
      }
      return { purged: await this.work.purgeDeadLetters(filterOf(body.filter as Record<string, unknown>)) };
    }
  }
  return DeadLettersController;
}
