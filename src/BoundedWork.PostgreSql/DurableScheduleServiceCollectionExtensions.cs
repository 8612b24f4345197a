using BoundedWork.Hosting;
using BoundedWork.PostgreSql;
using BoundedWork.PostgreSql.Internal;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Hosting;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Registers durable recurring schedules: stored in PostgreSQL, each tick enqueued once across the fleet.</summary>
public static class DurableScheduleServiceCollectionExtensions
{
    /// <summary>
    /// Defines a durable schedule in code: each of its ticks is enqueued once, across every node that runs this
    /// registration, as a <see cref="ScheduledTick"/> on <paramref name="queue"/>, which must be a PostgreSQL work queue
    /// of <see cref="ScheduledTick"/> (<c>AddWorkQueue&lt;ScheduledTick, MyHandler&gt;("queue").UsePostgreSql(...)</c>);
    /// the item then runs with the queue's retries, limits and dead letters. The schedule is stored when a node starts
    /// (see <see cref="IDurableSchedules"/> for which definition wins after a runtime change).
    /// </summary>
    /// <param name="services">The service collection.</param>
    /// <param name="name">The schedule's name: 1 to 200 characters without control characters, unique within the queue's schema.</param>
    /// <param name="queue">The queue its ticks are enqueued on.</param>
    /// <param name="schedule">When it ticks (<see cref="RecurringSchedule.Cron(string, string)"/> or <see cref="RecurringSchedule.Every(TimeSpan)"/>).</param>
    /// <param name="configure">Optional missed-tick settings.</param>
    /// <returns>The service collection.</returns>
    /// <exception cref="ArgumentNullException">An argument is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">The name is invalid or already defined, or a setting is out of range (the message names it); nothing is registered.</exception>
    public static IServiceCollection AddDurableSchedule(
        this IServiceCollection services, string name, string queue, RecurringSchedule schedule, Action<DurableScheduleOptions>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(services);
        DurableScheduleRegistration.ValidateName(name);
        ArgumentException.ThrowIfNullOrWhiteSpace(queue);
        ArgumentNullException.ThrowIfNull(schedule);
        var options = new DurableScheduleOptions();
        configure?.Invoke(options);
        options.Validate();
        if (services.Any(d => d.ImplementationInstance is DurableScheduleRegistration { Name: { } existing } && existing == name))
        {
            throw new ArgumentException($"A durable schedule named '{name}' is already defined.", nameof(name));
        }

        services.AddSingleton(new DurableScheduleRegistration(queue, name, schedule, options));
        return AddCore(services);
    }

    /// <summary>
    /// Runs the durable schedules of <paramref name="queue"/> on this node, those defined in code and those added at
    /// runtime (<see cref="IDurableSchedules.AddAsync"/>), without defining one in code.
    /// </summary>
    /// <param name="services">The service collection.</param>
    /// <param name="queue">A PostgreSQL work queue of <see cref="ScheduledTick"/>.</param>
    /// <returns>The service collection.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="services"/> or <paramref name="queue"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException"><paramref name="queue"/> is empty.</exception>
    public static IServiceCollection AddDurableSchedules(this IServiceCollection services, string queue)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentException.ThrowIfNullOrWhiteSpace(queue);
        services.AddSingleton(new DurableScheduleRegistration(queue, null, null, null));
        return AddCore(services);
    }

    /// <summary>
    /// Defines durable schedules from configuration, one child section per schedule, its key the schedule's name:
    /// <c>Queue</c>, and <c>Cron</c> (with an optional <c>TimeZone</c>, UTC by default) or <c>Interval</c>; optionally
    /// <c>MissedTicks</c>, <c>MaxCatchUp</c>, <c>MisfireThreshold</c> and <c>StartPaused</c> (see
    /// <see cref="DurableScheduleOptions"/>). The section is read once, here; a schedule from configuration is a
    /// definition like one in code (stored when a node starts; a runtime change holds until the definition changes).
    /// </summary>
    /// <param name="services">The service collection.</param>
    /// <param name="configuration">The section, such as <c>builder.Configuration.GetSection("DurableSchedules")</c>.</param>
    /// <returns>The service collection.</returns>
    /// <exception cref="ArgumentNullException">An argument is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">
    /// A setting is missing, unknown or invalid (an expression that does not parse or never fires, an unknown time zone),
    /// or a name is invalid or already defined: the parameter name is the setting's configuration path, and no schedule
    /// of the section is registered.
    /// </exception>
    public static IServiceCollection AddDurableSchedules(this IServiceCollection services, IConfiguration configuration)
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(configuration);
        var read = DurableScheduleConfiguration.Read(configuration);
        var names = new HashSet<string>(services.Select(static d => d.ImplementationInstance).OfType<DurableScheduleRegistration>().Select(static r => r.Name).OfType<string>(), StringComparer.Ordinal);
        if (read.FirstOrDefault(r => !names.Add(r.Name!)) is { } taken)
        {
            var path = configuration is IConfigurationSection section ? ConfigurationPath.Combine(section.Path, taken.Name!) : taken.Name!;
            throw new ArgumentException($"Durable schedule setting '{path}' is invalid: a durable schedule named '{taken.Name}' is already defined. No durable schedule from configuration is registered.", path);
        }

        foreach (var registration in read)
        {
            services.AddSingleton(registration);
        }

        return AddCore(services);
    }

    private static IServiceCollection AddCore(IServiceCollection services)
    {
        services.TryAddSingleton<DurableSchedules>();
        services.TryAddSingleton<IDurableSchedules>(static sp => sp.GetRequiredService<DurableSchedules>());
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IHostedService, DurableSchedulesHostedService>());
        return services;
    }
}
