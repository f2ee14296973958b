import { BadRequestException, Inject, Injectable, Logger } from '@nestjs/common';
import { RedriveInProgressError } from '../core/errors/redrive-in-progress.error';
import { type FilterFields, describeFields, fieldsOf, filterOfFields } from './console-filter';
import { actorOf, type ConsoleRequest, originProblem, tokenMatches } from './console-http';
import { ConsolePages } from './console-pages';
import { confirmContent, resultContent } from './views/dead-letters.view';

/** Ids given at most in one action (a page of the list holds at most 500). */
const MAX_IDS = 1000;

type Form = Record<string, unknown>;

/**
 * @internal
 * The console's actions (POST only): redrive one, the selected or all matching (after a dry run's
 * count), discard, purge. Each is refused unless its origin is the console's (or an allowed one) and
 * its form carries the CSRF cookie's token; each reports its counts and is logged with the acting user.
 */
@Injectable()
export class ConsoleActions {
  private readonly logger = new Logger('DeferredWorkConsole');

  constructor(@Inject(ConsolePages) private readonly pages: ConsolePages) {}

  /** Why the request must be refused (403), or `undefined`. */
  private refusal(request: ConsoleRequest): string | undefined {
    const origin = originProblem(request, this.pages.options);
    if (origin) return `Refused: ${origin}.`;
    const body = request.body;
    if (!body || typeof body !== 'object') {
      return "Refused: the form's body was not read. The console needs Nest's urlencoded body parser (the default; not bodyParser: false).";
    }
    if (!tokenMatches(request, (body as Form)._csrf)) {
      return 'Refused: the form has no valid CSRF token (its _csrf field must equal the dw-console-csrf cookie). Reload the console page and try again.';
    }
    return undefined;
  }

  /** Runs an action after the checks; a refusal is a 403 page, and changes nothing. */
  private async act(request: ConsoleRequest, response: unknown, run: (form: Form, fields: FilterFields) => Promise<void>): Promise<void> {
    const refusal = this.refusal(request);
    if (refusal) {
      this.logger.warn(`${actorOf(request)} was refused a console action: ${refusal}`);
      this.pages.problem(request, response, 2, 403, refusal);
      return;
    }
    const form = request.body as Form;
    await this.pages.guarded(request, response, 2, () => run(form, fieldsOf(form)));
  }

  private idsOf(form: Form): string[] {
    const raw = form.id;
    const ids = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((id): id is string => typeof id === 'string' && id !== '');
    if (ids.length === 0) throw new BadRequestException('Nothing selected: tick the dead letters to act on first.');
    if (ids.length > MAX_IDS) throw new BadRequestException(`At most ${MAX_IDS} dead letters at once; use "all matching" with a filter instead.`);
    return [...new Set(ids)];
  }

  redrive(request: ConsoleRequest, response: unknown): Promise<void> {
    return this.act(request, response, async (form, fields) => {
      const byFilter = form.scope === 'filter';
      const ids = byFilter ? [] : this.idsOf(form);
      const selector = byFilter ? { filter: filterOfFields(fields) } : { ids };
      if (byFilter && form.confirm !== 'yes') {
        const dry = await this.work.redriveDeadLetters(selector, { dryRun: true });
        this.pages.page(request, response, 2, 'Redrive', 'dead-letters', (ctx) => confirmContent(ctx, 'redrive', fields, dry.matched, dry.redriven, dry.skipped));
        return;
      }
      let result;
      try {
        result = await this.work.redriveDeadLetters(selector);
      } catch (error) {
        if (!(error instanceof RedriveInProgressError)) throw error;
        this.pages.problem(request, response, 2, 409, error.message);
        return;
      }
      const what = byFilter ? `matching ${describeFields(fields)}` : `by id (${ids.length} selected)`;
      this.logger.log(`${actorOf(request)} redrove dead letters ${what}: ${result.matched} matched, ${result.redriven} redriven, ${result.skipped.length} skipped`);
      this.pages.page(request, response, 2, 'Redriven', 'dead-letters', (ctx) =>
        resultContent(ctx, `Redrove ${result.redriven} of ${result.matched}`, [['Matched', result.matched], ['Redriven', result.redriven], ['Skipped', result.skipped.length]], fields, result.skipped),
      );
    });
  }

  discard(request: ConsoleRequest, response: unknown): Promise<void> {
    return this.act(request, response, async (form, fields) => {
      const ids = this.idsOf(form);
      const discarded = await this.work.discardDeadLetters(ids);
      this.logger.log(`${actorOf(request)} discarded dead letters by id: ${ids.length} selected, ${discarded} discarded`);
      this.pages.page(request, response, 2, 'Discarded', 'dead-letters', (ctx) =>
        resultContent(ctx, `Discarded ${discarded} of ${ids.length}`, [['Selected', ids.length], ['Discarded', discarded]], fields),
      );
    });
  }

  purge(request: ConsoleRequest, response: unknown): Promise<void> {
    return this.act(request, response, async (form, fields) => {
      const filter = filterOfFields(fields);
      if (form.confirm !== 'yes') {
        const count = await this.work.countDeadLetters(filter);
        this.pages.page(request, response, 2, 'Purge', 'dead-letters', (ctx) => confirmContent(ctx, 'purge', fields, count, count, []));
        return;
      }
      const purged = await this.work.purgeDeadLetters(filter);
      this.logger.log(`${actorOf(request)} purged dead letters matching ${describeFields(fields)}: ${purged} purged`);
      this.pages.page(request, response, 2, 'Purged', 'dead-letters', (ctx) => resultContent(ctx, `Purged ${purged}`, [['Purged', purged]], fields));
    });
  }

  private get work() {
    return this.pages.work;
  }
}
