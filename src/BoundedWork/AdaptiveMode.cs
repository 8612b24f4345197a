namespace BoundedWork;

/// <summary>Whether an executor finds its own worker count (see <see cref="BoundedExecutorSettings.AdaptiveMode"/>).</summary>
public enum AdaptiveMode
{
    /// <summary>The worker count changes only when someone resizes the executor. The default.</summary>
    Off,

    /// <summary>
    /// The executor's watchdog adjusts the worker count between <see cref="BoundedExecutorSettings.AdaptiveMinWorkerCount"/>
    /// and <see cref="BoundedExecutorSettings.AdaptiveMaxWorkerCount"/>, and records every change it makes.
    /// </summary>
    On,

    /// <summary>Every decision is made and recorded as in <see cref="On"/>, but the worker count is left as it is.</summary>
    Advisory,
}
