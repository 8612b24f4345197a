namespace BoundedWork.Synchronous;

/// <summary>
/// A synchronous (blocking) service bound to the executor its calls run on, so asynchronous callers reach a whole
/// legacy interface through one object: <c>await products.RunAsync(static (p, id) =&gt; p.Get(id), id)</c>. Every
/// call runs on a worker of <see cref="Executor"/>, never on the caller's thread or the ThreadPool, and the caller's
/// continuation never runs on a worker.
/// </summary>
/// <typeparam name="TService">The blocking service's type, typically a legacy interface such as <c>IProductRepository</c>.</typeparam>
/// <remarks>
/// <para>
/// The calls are plain delegates: no reflection and no generated code, and the cost per call is the executor's
/// <c>RunAsync</c> plus one small closure. To give existing asynchronous callers an asynchronous interface, write a
/// small facade whose methods are one line each (<c>Task&lt;Product&gt; GetAsync(int id) =&gt; _products.RunAsync(...)</c>).
/// </para>
/// <para>
/// The service is called from worker threads, as many at once as the executor has workers: a service that is not
/// thread-safe needs an executor with one worker (which also keeps its calls in submission order).
/// </para>
/// </remarks>
public sealed class BlockingService<TService>
    where TService : class
{
    private readonly TService _service;

    /// <summary>Binds <paramref name="service"/> to <paramref name="executor"/>.</summary>
    /// <param name="executor">The executor whose workers run every call.</param>
    /// <param name="service">The blocking service.</param>
    /// <exception cref="ArgumentNullException"><paramref name="executor"/> or <paramref name="service"/> is <see langword="null"/>.</exception>
    public BlockingService(BoundedExecutor executor, TService service)
    {
        ArgumentNullException.ThrowIfNull(executor);
        ArgumentNullException.ThrowIfNull(service);
        Executor = executor;
        _service = service;
    }

    /// <summary>Gets the executor whose workers run every call.</summary>
    public BoundedExecutor Executor { get; }

    /// <summary>Runs a call that returns a result on a worker thread.</summary>
    /// <typeparam name="TResult">The call's result type.</typeparam>
    /// <param name="call">The call, given the service.</param>
    /// <param name="cancellationToken">Cancels the call if it has not started yet; it then never runs and the task is cancelled.</param>
    /// <returns>A task with the call's result; faulted with its exception or a <see cref="RejectedExecutionException"/>.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="call"/> is <see langword="null"/>.</exception>
    public Task<TResult> RunAsync<TResult>(Func<TService, TResult> call, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(call);
        var service = _service;
        return Executor.RunAsync(() => call(service), call, cancellationToken);
    }

    /// <summary>
    /// Runs a call with an argument on a worker thread; with a <see langword="static"/> lambda the caller allocates no
    /// closure of its own.
    /// </summary>
    /// <typeparam name="TArgument">The argument's type.</typeparam>
    /// <typeparam name="TResult">The call's result type.</typeparam>
    /// <param name="call">The call, given the service and <paramref name="argument"/>.</param>
    /// <param name="argument">The argument passed to <paramref name="call"/>.</param>
    /// <param name="cancellationToken">Cancels the call if it has not started yet.</param>
    /// <returns>A task with the call's result; faulted with its exception or a <see cref="RejectedExecutionException"/>.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="call"/> is <see langword="null"/>.</exception>
    public Task<TResult> RunAsync<TArgument, TResult>(Func<TService, TArgument, TResult> call, TArgument argument, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(call);
        var service = _service;
        return Executor.RunAsync(() => call(service, argument), call, cancellationToken);
    }

    /// <summary>Runs a call without a result on a worker thread.</summary>
    /// <param name="call">The call, given the service.</param>
    /// <param name="cancellationToken">Cancels the call if it has not started yet.</param>
    /// <returns>A task that completes when the call has run; faulted with its exception or a <see cref="RejectedExecutionException"/>.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="call"/> is <see langword="null"/>.</exception>
    public Task RunAsync(Action<TService> call, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(call);
        var service = _service;
        return Executor.RunAsync(
            () =>
            {
                call(service);
                return true;
            },
            call,
            cancellationToken);
    }

    /// <summary>
    /// Runs a call on a worker thread and blocks the calling thread until it has run, for synchronous callers, with
    /// the deadlock protection and ThreadPool reporting of
    /// <see cref="BoundedExecutorSynchronousExtensions.RunAndWait{TResult}(BoundedExecutor, Func{TResult}, CancellationToken)"/>.
    /// </summary>
    /// <typeparam name="TResult">The call's result type.</typeparam>
    /// <param name="call">The call, given the service.</param>
    /// <param name="cancellationToken">Cancels the call if it has not started yet.</param>
    /// <returns>The call's result.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="call"/> is <see langword="null"/>.</exception>
    /// <exception cref="RejectedExecutionException">The executor rejected the call.</exception>
    /// <exception cref="OperationCanceledException"><paramref name="cancellationToken"/> was cancelled before the call started.</exception>
    public TResult RunAndWait<TResult>(Func<TService, TResult> call, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(call);
        var service = _service;
        return BoundedExecutorSynchronousExtensions.RunAndWaitCore(Executor, () => call(service), call, cancellationToken);
    }
}
