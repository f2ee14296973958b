/**
 * The `realistic` scenario's routes, `POST /realistic/<variant>`: what a typical Nest endpoint does
 * before its side-effect — a bearer-token guard, Nest's `ValidationPipe` on a class-validator DTO
 * (a nested address, an array of lines), one PostgreSQL query through `pg`, a JSON response of about
 * 2 KB — then the side-effect (a BullMQ job, a log record, a metric point) five ways: none (`plain`),
 * awaited in the handler (`blocking`), in an interceptor's `tap` (`article-tap`), through
 * `@nestjs/event-emitter` (`event-emitter`) and deferred with the library (`deferred`, and
 * `deferred-packed` with the BullMQ sink's `packJobs`).
 */
import {
  Body,
  type CanActivate,
  Controller,
  type ExecutionContext,
  HttpCode,
  Inject,
  Injectable,
  Post,
  Req,
  type Type,
  UnauthorizedException,
  UseGuards,
  UseInterceptors,
  UsePipes,
  ValidationPipe,
} from '@nestjs/common';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { Type as TransformTo } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsInt,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { AfterResponse, Deferred, type DeferredScope } from 'nestjs-deferred-work';
import { articleTapInterceptor } from './article-tap.interceptor.js';
import { countHandled, inHandler, routeKey, runEffect } from './counters.js';
import { type EffectEvent, effectEventName } from './effect.listener.js';
import type { ProductRow, RealisticParts } from './realistic.js';

export class AddressDto {
  @IsString() @Length(1, 120) street!: string;
  @IsString() @Length(1, 80) city!: string;
  @Matches(/^\d{5}$/) zip!: string;
  @IsString() @Length(2, 2) country!: string;
}

export class OrderLineDto {
  @Matches(/^SKU-\d{4}$/) sku!: string;
  @IsInt() @Min(1) @Max(100) quantity!: number;
}

export class CreateOrderDto {
  @IsString() @Length(1, 40) customerId!: string;
  @ValidateNested() @TransformTo(() => AddressDto) shipping!: AddressDto;
  @IsArray() @ArrayMinSize(1) @ArrayMaxSize(20) @ValidateNested({ each: true }) @TransformTo(() => OrderLineDto) lines!: OrderLineDto[];
  @IsOptional() @IsString() @MaxLength(200) note?: string;
}

/** The users the bearer tokens stand for (a lookup, as a session or JWT cache would be). */
const USERS = new Map([['bench-token-c42', { id: 'c-42', name: 'Ada Lovelace', tier: 'gold' }]]);
type User = typeof USERS extends Map<string, infer U> ? U : never;
interface AuthedRequest {
  headers: Record<string, string | string[] | undefined>;
  user?: User;
}

/** `Authorization: Bearer <token>` of a known user, who is set on the request; 401 otherwise. */
@Injectable()
export class BearerGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<AuthedRequest>();
    const header = request.headers.authorization;
    const user = typeof header === 'string' && header.startsWith('Bearer ') ? USERS.get(header.slice(7)) : undefined;
    if (!user) throw new UnauthorizedException('a bearer token of a known user is required');
    request.user = user;
    return true;
  }
}

let orders = 0;

/** The response: the order with its lines priced from the products (about 2 KB of JSON). */
function orderResponse(order: CreateOrderDto, user: User, products: ProductRow[]) {
  const bySku = new Map(products.map((p) => [p.sku, p]));
  const lines = order.lines.map((line) => {
    const product = bySku.get(line.sku);
    const unit = product?.price_cents ?? 0;
    return {
      sku: line.sku,
      name: product?.name ?? null,
      description: product?.description ?? null,
      quantity: line.quantity,
      unitPrice: { amount: unit / 100, currency: 'EUR' },
      subtotal: { amount: (unit * line.quantity) / 100, currency: 'EUR' },
      inStock: (product?.stock ?? 0) >= line.quantity,
    };
  });
  const total = lines.reduce((sum, line) => sum + line.subtotal.amount, 0);
  const id = ++orders;
  return {
    id,
    status: 'accepted',
    customer: user,
    shipping: { ...order.shipping, method: 'standard', estimatedDays: 2 },
    lines,
    total: { amount: total, currency: 'EUR', tax: Math.round(total * 19) / 100 },
    note: order.note ?? null,
    links: { self: `/orders/${id}`, invoice: `/orders/${id}/invoice`, tracking: `/orders/${id}/tracking` },
  };
}

/** The `realistic` scenario's controller over `parts` (its five routes). */
export function realisticController(parts: RealisticParts): Type<unknown> {
  const { effect } = parts;
  const key = (variant: string) => routeKey('realistic', variant);
  const perform = () => effect.perform();
  const eventName = effectEventName('realistic');
  const event: EffectEvent = { scenario: 'realistic' };
  const respond = async (order: CreateOrderDto, request: AuthedRequest) =>
    orderResponse(
      order,
      request.user!,
      await parts.products(order.lines.map((line) => line.sku)),
    );

  /** The deferred routes' body: count, answer, then defer the effect's items into `work`. */
  const answerThenDefer = (variant: string, order: CreateOrderDto, request: AuthedRequest, work: DeferredScope) => {
    countHandled(key(variant));
    return inHandler(async () => {
      const body = await respond(order, request);
      effect.defer(work);
      return body;
    });
  };

  @Controller('realistic')
  @UseGuards(BearerGuard)
  @UsePipes(new ValidationPipe({ whitelist: true, forbidNonWhitelisted: true, transform: true }))
  class RealisticController {
    constructor(@Inject(EventEmitter2) private readonly eventEmitter: EventEmitter2) {}

    @Post('plain')
    @HttpCode(200)
    async plain(@Body() order: CreateOrderDto, @Req() request: AuthedRequest) {
      countHandled(key('plain'));
      return inHandler(() => respond(order, request));
    }

    @Post('blocking')
    @HttpCode(200)
    async blocking(@Body() order: CreateOrderDto, @Req() request: AuthedRequest) {
      countHandled(key('blocking'));
      return inHandler(async () => {
        const body = await respond(order, request);
        await runEffect(key('blocking'), perform);
        return body;
      });
    }

    @Post('article-tap')
    @HttpCode(200)
    @UseInterceptors(articleTapInterceptor(key('article-tap'), perform))
    async articleTap(@Body() order: CreateOrderDto, @Req() request: AuthedRequest) {
      countHandled(key('article-tap'));
      return inHandler(() => respond(order, request));
    }

    @Post('event-emitter')
    @HttpCode(200)
    async emitEvent(@Body() order: CreateOrderDto, @Req() request: AuthedRequest) {
      countHandled(key('event-emitter'));
      return inHandler(async () => {
        const body = await respond(order, request);
        this.eventEmitter.emit(eventName, event);
        return body;
      });
    }

    @Post('deferred')
    @HttpCode(200)
    @AfterResponse(effect.afterResponse)
    async deferred(@Body() order: CreateOrderDto, @Req() request: AuthedRequest, @Deferred() work: DeferredScope) {
      return answerThenDefer('deferred', order, request, work);
    }

    /** The deferred route again, its BullMQ job to a twin of the sink with `packJobs`. */
    @Post('deferred-packed')
    @HttpCode(200)
    @AfterResponse(effect.packedAfterResponse)
    async deferredPacked(@Body() order: CreateOrderDto, @Req() request: AuthedRequest, @Deferred() work: DeferredScope) {
      return answerThenDefer('deferred-packed', order, request, work);
    }
  }
  return RealisticController;
}
