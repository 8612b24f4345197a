using System.Diagnostics.CodeAnalysis;
using System.Text.Json;
using System.Text.Json.Serialization.Metadata;
using BoundedWork.Hosting;
using BoundedWork.PostgreSql;
using BoundedWork.PostgreSql.Internal;
using Npgsql;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>Stores a typed work queue in PostgreSQL.</summary>
public static class PostgreSqlWorkQueueBuilderExtensions
{
    /// <summary>
    /// Stores the queue's items in PostgreSQL instead of memory, serialized with System.Text.Json's reflection-based
    /// serializer (<see cref="PostgreSqlWorkQueueOptions{T}.JsonSerializerOptions"/>); for trimmed or native AOT
    /// applications, pass a source-generated <see cref="JsonTypeInfo{T}"/> to the other overload.
    /// </summary>
    /// <typeparam name="T">The item type.</typeparam>
    /// <param name="builder">The builder <c>AddWorkQueue</c> returned.</param>
    /// <param name="connectionString">An Npgsql connection string.</param>
    /// <param name="configure">Optional storage settings (schema, lease, retention, JSON options); validated here.</param>
    /// <returns>The builder, to configure the executor.</returns>
    /// <inheritdoc cref="UsePostgreSql{T}(WorkQueueBuilder{T}, string, JsonTypeInfo{T}, Action{PostgreSqlWorkQueueOptions{T}}?)" path="/exception"/>
    [RequiresUnreferencedCode("Serializes the items with reflection; pass a source-generated JsonTypeInfo<T> instead.")]
    [RequiresDynamicCode("Serializes the items with reflection; pass a source-generated JsonTypeInfo<T> instead.")]
    public static WorkQueueBuilder<T> UsePostgreSql<T>(this WorkQueueBuilder<T> builder, string connectionString, Action<PostgreSqlWorkQueueOptions<T>>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(builder);
        var options = Validate(builder, connectionString, configure);
        var json = (JsonTypeInfo<T>)(options.JsonSerializerOptions ?? JsonSerializerOptions.Default).GetTypeInfo(typeof(T));
        return Register(builder, connectionString, options, json);
    }

    /// <summary>
    /// Stores the queue's items in PostgreSQL instead of memory: producers keep injecting <see cref="IWorkQueue{T}"/>
    /// (or <see cref="IPostgreSqlWorkQueue{T}"/> to enqueue inside their own transaction), the handler, dead-letter
    /// handlers and the executor stay the same, and any number of processes with the same registration consume the
    /// queue together. The schema is created or upgraded when the host starts (a failure fails the start). The queue is
    /// also registered as an <see cref="IWorkQueueCluster"/>: its consuming nodes and its fleet-wide settings.
    /// </summary>
    /// <typeparam name="T">The item type.</typeparam>
    /// <param name="builder">The builder <c>AddWorkQueue</c> returned.</param>
    /// <param name="connectionString">An Npgsql connection string.</param>
    /// <param name="jsonTypeInfo">The source-generated serialization metadata of <typeparamref name="T"/> (a <c>JsonSerializerContext</c>'s property).</param>
    /// <param name="configure">Optional storage settings (schema, lease, retention); validated here.</param>
    /// <returns>The builder, to configure the executor.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="builder"/>, <paramref name="connectionString"/> or <paramref name="jsonTypeInfo"/> is <see langword="null"/>.</exception>
    /// <exception cref="ArgumentException">The connection string cannot be parsed, or a setting is invalid (the message names it).</exception>
    /// <exception cref="InvalidOperationException">The queue already has a storage.</exception>
    public static WorkQueueBuilder<T> UsePostgreSql<T>(this WorkQueueBuilder<T> builder, string connectionString, JsonTypeInfo<T> jsonTypeInfo, Action<PostgreSqlWorkQueueOptions<T>>? configure = null)
    {
        ArgumentNullException.ThrowIfNull(builder);
        ArgumentNullException.ThrowIfNull(jsonTypeInfo);
        var options = Validate(builder, connectionString, configure);
        return Register(builder, connectionString, options, jsonTypeInfo);
    }

    private static PostgreSqlWorkQueueOptions<T> Validate<T>(WorkQueueBuilder<T> builder, string connectionString, Action<PostgreSqlWorkQueueOptions<T>>? configure)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(connectionString);
        var name = builder.Name;
        try
        {
            _ = new NpgsqlConnectionStringBuilder(connectionString);
        }
        catch (ArgumentException ex)
        {
            throw new ArgumentException($"The PostgreSQL connection string of work queue '{name}' is invalid: {ex.Message}", nameof(connectionString), ex);
        }

        var options = new PostgreSqlWorkQueueOptions<T>();
        configure?.Invoke(options);
        if (options.GetValidationErrors() is { Count: > 0 } errors)
        {
            throw new ArgumentException($"Invalid PostgreSqlWorkQueueOptions for work queue '{name}': {string.Join(" ", errors)}", nameof(configure));
        }

        return options;
    }

    private static WorkQueueBuilder<T> Register<T>(WorkQueueBuilder<T> builder, string connectionString, PostgreSqlWorkQueueOptions<T> options, JsonTypeInfo<T> json)
    {
        builder.UseStorage((provider, context) => new PostgreSqlWorkQueue<T>(context, options, connectionString, json, provider));
        var name = builder.Name;
        var services = builder.Services;
        services.AddKeyedSingleton<IPostgreSqlWorkQueue<T>>(name, static (provider, key) => (IPostgreSqlWorkQueue<T>)provider.GetRequiredKeyedService<IWorkQueue<T>>(key));
        if (!services.Any(descriptor => descriptor.ServiceType == typeof(IPostgreSqlWorkQueue<T>) && descriptor.ServiceKey is null))
        {
            services.AddSingleton(provider => provider.GetRequiredKeyedService<IPostgreSqlWorkQueue<T>>(name));
        }

        // The queue seen and operated as a cluster (its nodes, its fleet-wide settings), like its dead letters.
        services.AddSingleton<IWorkQueueCluster>(provider => (IWorkQueueCluster)provider.GetRequiredKeyedService<IWorkQueue<T>>(name));
        services.AddSingleton<IWorkQueuePauseControl>(provider => (IWorkQueuePauseControl)provider.GetRequiredKeyedService<IWorkQueue<T>>(name));
        services.AddSingleton<IStoredItemSearch>(provider => (IStoredItemSearch)provider.GetRequiredKeyedService<IWorkQueue<T>>(name));

        return builder;
    }
}
