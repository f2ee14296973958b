import { Controller, Logger, Param, Post } from '@nestjs/common';
import { AfterResponse, Deferred, type DeferredScope } from 'nestjs-deferred-work';

@Controller('users')
export class UsersController {
  private readonly logger = new Logger(UsersController.name);

  @Post(':id/welcome')
  @AfterResponse() // hold this route's deferred work until its response has finished
  welcome(@Param('id') id: string, @Deferred() work: DeferredScope) {
    this.logger.log(`answering the welcome request of user ${id}`);
    work.log('info', 'welcome requested', { userId: id }); // -> LoggerSink, after the response
    work.run(() => this.logger.log(`welcome email sent to user ${id}`)); // a callback, after the response
    return { queued: true };
  }
}
