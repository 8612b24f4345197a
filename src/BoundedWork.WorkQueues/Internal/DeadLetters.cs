using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;

namespace BoundedWork.Hosting.Internal;

/// <summary>Delivers a queue's dead letters to every registered <see cref="IDeadLetterHandler{T}"/>, or logs them when there is none.</summary>
/// <remarks>
/// A dead letter that arises inside one of this queue's own deliveries (a handler put its item back into the queue,
/// which refused it, or evicted another item for it) is logged instead of delivered: handing it back to the handlers
/// could repeat for ever, recursing until the stack overflows when the handlers run synchronously. "Inside" follows
/// the delivery's asynchronous flow (<see cref="DeadLetterFlow"/>), so a handler that awaits first is caught too;
/// the queue runs each item's own processing outside that flow, so an item a handler put back that runs and fails
/// later is delivered as usual.
/// </remarks>
internal sealed class DeadLetters<T>(string queueName, IServiceScopeFactory scopes, ILogger logger)
{
    /// <summary>
    /// Delivers one dead letter in its own scope; never throws. A handler that fails, or cannot even be created, is
    /// logged with the item, and every other handler still gets the letter.
    /// </summary>
    public async Task DeliverAsync(DeadLetter<T> letter)
    {
        if (DeadLetterFlow.IsDelivering(this))
        {
            logger.DeadLetterNotRedelivered(queueName, letter.Reason, letter.RejectionReason, letter.Attempts, (object?)letter.Item ?? letter.Payload, letter.Exception);
            return;
        }

        // Set in this async method: the flow of its handlers carries it, its caller's does not.
        DeadLetterFlow.Enter(this);
        try
        {
            var scope = scopes.CreateAsyncScope();
            await using (scope.ConfigureAwait(false))
            {
                IDeadLetterHandler<T>[]? handlers = null;
                try
                {
                    handlers = [.. scope.ServiceProvider.GetServices<IDeadLetterHandler<T>>()];
                }
                catch (Exception)
                {
                    // Some handler could not be created; which one, the container does not say: create them one by one.
                }

                var delivered = handlers is null
                    ? await DeliverOneByOneAsync(letter, scope.ServiceProvider).ConfigureAwait(false)
                    : await DeliverAsync(letter, handlers).ConfigureAwait(false);
                if (!delivered)
                {
                    logger.DeadLettered(queueName, letter.Reason, letter.RejectionReason, letter.Attempts, (object?)letter.Item ?? letter.Payload, letter.Exception);
                }
            }
        }
        catch (Exception ex)
        {
            // The container is gone (a dead letter after the host stopped, say): the log line still carries the item.
            logger.DeadLetterHandlerFailed(queueName, letter.Reason, letter.Item, ex);
        }
    }

    private async Task<bool> DeliverAsync(DeadLetter<T> letter, IDeadLetterHandler<T>[] handlers)
    {
        foreach (var handler in handlers)
        {
            await HandleAsync(handler, letter).ConfigureAwait(false);
        }

        return handlers.Length > 0;
    }

    private async Task<bool> DeliverOneByOneAsync(DeadLetter<T> letter, IServiceProvider scope)
    {
        var fallback = scope.GetRequiredService<DeadLetterHandlerFallback>();
        var registrations = fallback.RegistrationsOf(typeof(IDeadLetterHandler<T>));
        foreach (var registration in registrations)
        {
            object handler;
            bool owned;
            try
            {
                handler = fallback.Create(registration, typeof(IDeadLetterHandler<T>), scope, out owned);
            }
            catch (Exception ex)
            {
                logger.DeadLetterHandlerFailed(queueName, letter.Reason, letter.Item, ex);
                continue;
            }

            try
            {
                await HandleAsync((IDeadLetterHandler<T>)handler, letter).ConfigureAwait(false);
            }
            finally
            {
                if (owned)
                {
                    await DisposeAsync(handler, letter).ConfigureAwait(false);
                }
            }
        }

        return registrations.Count > 0;
    }

    private async Task HandleAsync(IDeadLetterHandler<T> handler, DeadLetter<T> letter)
    {
        try
        {
            await handler.HandleAsync(letter, CancellationToken.None).ConfigureAwait(false);
        }
        catch (Exception ex)
        {
            logger.DeadLetterHandlerFailed(queueName, letter.Reason, letter.Item, ex);
        }
    }

    private async Task DisposeAsync(object handler, DeadLetter<T> letter)
    {
        try
        {
            await DeadLetterHandlerFallback.DisposeOwnedAsync(handler).ConfigureAwait(false);
        }
        catch (Exception ex)
        {
            logger.DeadLetterHandlerFailed(queueName, letter.Reason, letter.Item, ex);
        }
    }
}
