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
            ? static (services, item, cancellationToken) => ((IBlockingWorkHandler<T>)services.GetRequiredService<THandler>()).Handle(item, cancellationToken)
            : static (services, item, cancellationToken) =>
                // A dedicated worker, not a ThreadPool thread, waits here; meanwhile it makes the submissions the
                // handler's flow makes to its own full queue (see HandlerWait).
                HandlerWait.Run((IWorkHandler<T>)services.GetRequiredService<THandler>(), item, cancellationToken);

    public static bool IsHandler => typeof(IBlockingWorkHandler<T>).IsAssignableFrom(typeof(THandler))
        || typeof(IWorkHandler<T>).IsAssignableFrom(typeof(THandler));
}
