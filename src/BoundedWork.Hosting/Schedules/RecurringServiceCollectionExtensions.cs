using System.Diagnostics.CodeAnalysis;
using BoundedWork.Hosting;
using BoundedWork.Hosting.Internal;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Hosting;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers in-memory recurring schedules that run a handler on a named executor.</summary>
public static class RecurringServiceCollectionExtensions
{
    /// <summary>
    /// Registers a schedule that runs <paramref name="handler"/> on a worker of the executor named
    /// <paramref name="executor"/> at each tick of a cron expression, in this process only (for one run per tick
    /// across a fleet, use a durable schedule on a PostgreSQL queue). A hosted service starts it with the host.
    /// </summary>
    /// <param name="services">The service collection.</param>
    /// <param name="name">The schedule's name, unique ignoring case.</param>
    /// <param name="cron">Five fields (minute hour day month weekday), six with seconds first, or a macro such as <c>@daily</c>.</param>
    /// <param name="executor">The executor that runs it (registered with <c>AddBoundedExecutor</c>; checked at host start).</param>
    /// <param name="handler">The handler: blocking code is fine, it runs on the executor's worker.</param>
    /// <param name="timeZone">The time zone the expression is read in; <c>UTC</c> by default.</param>
    /// <param name="configure">Optional settings (overlap policy, jitter, start paused).</param>
    /// <returns>The service collection.</returns>
    /// <exception cref="ArgumentNullException">An argument is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">
    /// The name is empty or taken, the expression does not parse or never fires (parameter <c>cron</c>), the time zone
    /// is unknown (<c>timeZone</c>), or a setting is out of range (named); nothing is registered.
    /// </exception>
    public static IServiceCollection AddRecurring(
        this IServiceCollection services, string name, string cron, string executor, Action<RecurringTickContext> handler,
        string timeZone = "UTC", Action<RecurringScheduleOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(handler);
        return AddRecurringCore(services, name, RecurringSchedule.Cron(cron, timeZone), executor, _ => handler, configure);
    }

    /// <summary>Registers a schedule that runs <paramref name="handler"/> on the executor every <paramref name="interval"/>.</summary>
    /// <param name="services">The service collection.</param>
    /// <param name="name">The schedule's name, unique ignoring case.</param>
    /// <param name="interval">From one second to 366 days; ticks at its multiples counted from 1970-01-01 00:00 UTC.</param>
    /// <param name="executor">The executor that runs it.</param>
    /// <param name="handler">The handler.</param>
    /// <param name="configure">Optional settings.</param>
    /// <returns>The service collection.</returns>
    /// <exception cref="ArgumentNullException">An argument is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">The name is empty or taken, the interval is out of range, or a setting is (the message names it).</exception>
    public static IServiceCollection AddRecurring(
        this IServiceCollection services, string name, TimeSpan interval, string executor, Action<RecurringTickContext> handler,
        Action<RecurringScheduleOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(handler);
        return AddRecurringCore(services, name, RecurringSchedule.Every(interval), executor, _ => handler, configure);
    }

    /// <summary>
    /// Registers a schedule whose handler, <typeparamref name="THandler"/>, is resolved from a new scope for each run
    /// (registered as scoped unless it already is).
    /// </summary>
    /// <typeparam name="THandler">The handler type.</typeparam>
    /// <param name="services">The service collection.</param>
    /// <param name="name">The schedule's name, unique ignoring case.</param>
    /// <param name="schedule">When it ticks (<see cref="RecurringSchedule.Cron(string, string)"/> or <see cref="RecurringSchedule.Every(TimeSpan)"/>).</param>
    /// <param name="executor">The executor that runs it.</param>
    /// <param name="configure">Optional settings.</param>
    /// <returns>The service collection.</returns>
    /// <exception cref="ArgumentNullException">An argument is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">The name is empty or taken, or a setting is out of range (the message names it).</exception>
    public static IServiceCollection AddRecurring<[DynamicallyAccessedMembers(DynamicallyAccessedMemberTypes.PublicConstructors)] THandler>(
        this IServiceCollection services, string name, RecurringSchedule schedule, string executor, Action<RecurringScheduleOptions>? configure = null)
        where THandler : class, IRecurringHandler
    {
        ArgumentNullException.ThrowIfNull(services);
        services.TryAddScoped<THandler>();
        return AddRecurringCore(services, name, schedule, executor,
            static _ => static context => context.Services.GetRequiredService<THandler>().Run(context), configure);
    }

    private static IServiceCollection AddRecurringCore(
        IServiceCollection services, string name, RecurringSchedule schedule, string executor,
        Func<IServiceProvider, Action<RecurringTickContext>> handler, Action<RecurringScheduleOptions>? configure)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentException.ThrowIfNullOrWhiteSpace(name);
        ArgumentNullException.ThrowIfNull(schedule);
        ArgumentException.ThrowIfNullOrWhiteSpace(executor);
        var options = new RecurringScheduleOptions();
        configure?.Invoke(options);
        options.Validate();
        foreach (var descriptor in services)
        {
            if (descriptor.ImplementationInstance is RecurringRegistration existing
                && string.Equals(existing.Name, name, StringComparison.OrdinalIgnoreCase))
            {
                throw new ArgumentException($"A recurring schedule named '{existing.Name}' is already registered; names are unique ignoring case.", nameof(name));
            }
        }

        services.AddSingleton(new RecurringRegistration(name, schedule, executor, handler, options));
        services.TryAddSingleton<RecurringScheduleRegistry>();
        services.TryAddSingleton<IRecurringSchedules>(static sp => sp.GetRequiredService<RecurringScheduleRegistry>());
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IHostedService, RecurringScheduleHostedService>());
        return services;
    }
}
