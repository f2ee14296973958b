import { Controller, Get, HttpCode, Inject, Post, Query, Req, Res, UseGuards, type Type } from '@nestjs/common';
import { CONSOLE_SCRIPT } from './assets/console-script';
import { CONSOLE_ICON, CONSOLE_STYLE } from './assets/console-style';
import { ConsoleActions } from './console-actions';
import { type ConsoleRequest, send } from './console-http';
import type { ResolvedConsoleOptions } from './console-options';
import { ConsolePages } from './console-pages';

/**
 * @internal
 * The console's controller at `options.path`, every route behind `options.guards`: the pages and their
 * data (GET), the assets (GET), the actions (POST only: a GET to an action's URL finds no route).
 */
export function consoleController(options: ResolvedConsoleOptions): Type<unknown> {
  @Controller(options.path)
  @UseGuards(...options.guards)
  class DeferredWorkConsoleController {
    constructor(
      @Inject(ConsolePages) private readonly pages: ConsolePages,
      @Inject(ConsoleActions) private readonly actions: ConsoleActions,
    ) {}

    @Get()
    overview(@Req() request: ConsoleRequest, @Res() response: unknown): void {
      this.pages.overview(request, response);
    }

    @Get('overview/fragment')
    fragment(@Req() request: ConsoleRequest, @Res() response: unknown, @Query('root') root: unknown): void {
      this.pages.fragment(request, response, root);
    }

    @Get('overview.json')
    json(@Res() response: unknown): void {
      this.pages.json(response);
    }

    @Get('routes')
    routes(@Req() request: ConsoleRequest, @Res() response: unknown): void {
      this.pages.routes(request, response);
    }

    @Get('dead-letters')
    list(@Req() request: ConsoleRequest, @Res() response: unknown): Promise<void> {
      return this.pages.list(request, response);
    }

    @Get('dead-letters/record')
    record(@Req() request: ConsoleRequest, @Res() response: unknown): Promise<void> {
      return this.pages.record(request, response);
    }

    @Post('dead-letters/redrive')
    @HttpCode(200)
    redrive(@Req() request: ConsoleRequest, @Res() response: unknown): Promise<void> {
      return this.actions.redrive(request, response);
    }

    @Post('dead-letters/discard')
    @HttpCode(200)
    discard(@Req() request: ConsoleRequest, @Res() response: unknown): Promise<void> {
      return this.actions.discard(request, response);
    }

    @Post('dead-letters/purge')
    @HttpCode(200)
    purge(@Req() request: ConsoleRequest, @Res() response: unknown): Promise<void> {
      return this.actions.purge(request, response);
    }

    @Get('assets/console.js')
    script(@Res() response: unknown): void {
      send(response, 200, 'text/javascript; charset=utf-8', CONSOLE_SCRIPT);
    }

    @Get('assets/console.css')
    style(@Res() response: unknown): void {
      send(response, 200, 'text/css; charset=utf-8', CONSOLE_STYLE);
    }

    @Get('assets/icon.svg')
    icon(@Res() response: unknown): void {
      send(response, 200, 'image/svg+xml', CONSOLE_ICON);
    }
  }
  return DeferredWorkConsoleController;
}
