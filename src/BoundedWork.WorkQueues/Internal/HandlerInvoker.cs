using Microsoft.Extensions.DependencyInjection;

namespace BoundedWork.Hosting.Internal;

/// <summary>Calls a queue's handler, resolved from the attempt's scope, on the current (worker) thread.</summary>
internal static class HandlerInvoker<T, THandler>
    where THandler : class
{
    /// <summary>
    /// Calls <see cref="IBlockingWorkHandler{T}.Handle"/> when the handler has it; otherwise
    /// <see cref="IWorkHandler{T}.HandleAsync"/>, and the worker waits for its task so the worker count bounds the
    /// items in progress.
    /// </summary>
    public static readonly Action<IServiceProvider, T, CancellationToken> Instance =
        typeof(IBlockingWorkHandler<T>).IsAssignableFrom(typeof(THandler))
            ? static (services, item, cancellationToken) => ((IBlockingWorkHandler<T>)Resolve(services)).Handle(item, cancellationToken)
            : static (services, item, cancellationToken) =>
                // A dedicated worker, not a ThreadPool thread, waits here; meanwhile it makes the submissions the
                // handler's flow makes to its own full queue (see HandlerWait).
                HandlerWait.Run((IWorkHandler<T>)Resolve(services), item, cancellationToken);

    /// <summary>
    /// The handler from the attempt's scope; a service the container cannot find (the handler's own dependency, most
    /// often) is a <see cref="HandlerUnavailableException"/> naming it. Exceptions of the handler's constructor stay
    /// as they are: a failure of the attempt, retried as usual.
    /// </summary>
    private static THandler Resolve(IServiceProvider services)
    {
        try
        {
            return services.GetRequiredService<THandler>();
        }
        catch (InvalidOperationException ex) when (HandlerUnavailableException.IsMissingService(ex, out var missing))
        {
            throw new HandlerUnavailableException(typeof(THandler), missing, ex);
        }
    }

    public static bool IsHandler => typeof(IBlockingWorkHandler<T>).IsAssignableFrom(typeof(THandler))
        || typeof(IWorkHandler<T>).IsAssignableFrom(typeof(THandler));
}
