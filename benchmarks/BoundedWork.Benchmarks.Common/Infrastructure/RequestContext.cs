namespace BoundedWork.Benchmarks.Infrastructure;

/// <summary>
/// What a submitting thread carries in a real app: an ExecutionContext with something in it (a request's logging
/// scope, <c>Activity.Current</c> or <c>HttpContext</c>, each an AsyncLocal). The harnesses' producer threads enter it
/// once, so a contender that flows the context (BoundedExecutor's default, <c>FlowExecutionContext = true</c>)
/// captures and restores a real one per item, as it does for request code; a thread that never set an AsyncLocal has
/// only the empty default context, which costs next to nothing to flow and would flatter the default.
/// </summary>
public static class RequestContext
{
    private static readonly AsyncLocal<object?> s_request = new();

    /// <summary>Gives the calling thread a non-empty ExecutionContext; later calls on that thread do nothing.</summary>
    public static void Enter()
    {
        if (s_request.Value is null)
        {
            s_request.Value = new object();
        }
    }
}
