using System.Diagnostics.CodeAnalysis;

namespace BoundedWork.Hosting;

/// <summary>
/// Every executor registered with <c>AddBoundedExecutor</c>, by name, for code that works on all of them
/// (admin endpoints, health checks, diagnostics pages). Names are matched ignoring case.
/// </summary>
/// <remarks>
/// An executor is created the first time it is asked for, or when the host starts, whichever comes first.
/// </remarks>
public interface IBoundedExecutorRegistry
{
    /// <summary>Gets the names of the registered executors, in registration order.</summary>
    IReadOnlyList<string> Names { get; }

    /// <summary>Gets the executor registered under <paramref name="name"/>.</summary>
    /// <param name="name">The executor's name (any case).</param>
    /// <returns>The executor.</returns>
    /// <exception cref="KeyNotFoundException">No executor is registered under <paramref name="name"/>; the message names it.</exception>
    /// <exception cref="Microsoft.Extensions.Options.OptionsValidationException">The executor's settings are invalid.</exception>
    BoundedExecutor GetExecutor(string name);

    /// <summary>Gets the executor registered under <paramref name="name"/>, if there is one.</summary>
    /// <param name="name">The executor's name (any case).</param>
    /// <param name="executor">The executor, or <see langword="null"/>.</param>
    /// <returns><see langword="true"/> if an executor is registered under <paramref name="name"/>.</returns>
    bool TryGetExecutor(string name, [NotNullWhen(true)] out BoundedExecutor? executor);

    /// <summary>Takes one statistics snapshot of every registered executor, in registration order.</summary>
    /// <returns>One snapshot per executor.</returns>
    IReadOnlyList<BoundedExecutorStatistics> GetStatistics();
}
