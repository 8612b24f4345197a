using System.Diagnostics.CodeAnalysis;
using BoundedWork;
using BoundedWork.Hosting.Internal;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.Options;

namespace Microsoft.Extensions.DependencyInjection;

/// <summary>
/// Binds executor options from configuration, as <c>OptionsBuilderConfigurationExtensions</c> does for any options,
/// with every bad value reported at once.
/// </summary>
/// <remarks>
/// The configuration binder stops at the first value it cannot convert and throws, so the settings after it are never
/// bound or validated. These overloads, which the compiler prefers for an <see cref="OptionsBuilder{TOptions}"/> of
/// <see cref="BoundedExecutorOptions"/>, bind each configured value on its own with the same binder, and report each
/// value it cannot convert (with the binder's message, which names the configuration path and the value) as a
/// validation failure that names the executor, beside every setting out of range: start-up fails with one
/// <see cref="OptionsValidationException"/> that lists them all. A reload with bad values is logged and ignored; the
/// executor keeps its last valid settings.
/// </remarks>
public static class BoundedExecutorOptionsBuilderExtensions
{
    /// <summary>
    /// Binds the executor's options to the configuration section at <paramref name="configSectionPath"/> and reloads
    /// them when it changes.
    /// </summary>
    /// <param name="optionsBuilder">The executor's options builder (returned by <c>AddBoundedExecutor</c>).</param>
    /// <param name="configSectionPath">The section's path, such as <c>"BoundedWork:Executors:payments"</c>; empty for the root.</param>
    /// <param name="configureBinder">Configures the binder.</param>
    /// <returns>The options builder.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="optionsBuilder"/> or <paramref name="configSectionPath"/> is <see langword="null"/>.</exception>
    [RequiresUnreferencedCode(ExecutorOptionsBinding.RequiresUnreferencedCodeMessage)]
    [RequiresDynamicCode(ExecutorOptionsBinding.RequiresDynamicCodeMessage)]
    public static OptionsBuilder<BoundedExecutorOptions> BindConfiguration(
        this OptionsBuilder<BoundedExecutorOptions> optionsBuilder,
        string configSectionPath,
        Action<BinderOptions>? configureBinder = null)
    {
        ArgumentNullException.ThrowIfNull(optionsBuilder);
        ArgumentNullException.ThrowIfNull(configSectionPath);
        optionsBuilder.Configure<IConfiguration>((options, configuration) =>
            ExecutorOptionsBinding.Bind(configSectionPath.Length == 0 ? configuration : configuration.GetSection(configSectionPath), options, configureBinder));
        optionsBuilder.Services.AddSingleton<IOptionsChangeTokenSource<BoundedExecutorOptions>>(provider =>
            new ConfigurationChangeTokenSource<BoundedExecutorOptions>(optionsBuilder.Name, provider.GetRequiredService<IConfiguration>()));
        return optionsBuilder;
    }

    /// <summary>Binds the executor's options to <paramref name="config"/> and reloads them when it changes.</summary>
    /// <param name="optionsBuilder">The executor's options builder (returned by <c>AddBoundedExecutor</c>).</param>
    /// <param name="config">The configuration section of the executor.</param>
    /// <returns>The options builder.</returns>
    /// <exception cref="ArgumentNullException"><paramref name="optionsBuilder"/> or <paramref name="config"/> is <see langword="null"/>.</exception>
    [RequiresUnreferencedCode(ExecutorOptionsBinding.RequiresUnreferencedCodeMessage)]
    [RequiresDynamicCode(ExecutorOptionsBinding.RequiresDynamicCodeMessage)]
    public static OptionsBuilder<BoundedExecutorOptions> Bind(this OptionsBuilder<BoundedExecutorOptions> optionsBuilder, IConfiguration config) =>
        Bind(optionsBuilder, config, configureBinder: null);

    /// <inheritdoc cref="Bind(OptionsBuilder{BoundedExecutorOptions}, IConfiguration)"/>
    /// <param name="optionsBuilder">The executor's options builder (returned by <c>AddBoundedExecutor</c>).</param>
    /// <param name="config">The configuration section of the executor.</param>
    /// <param name="configureBinder">Configures the binder.</param>
    [RequiresUnreferencedCode(ExecutorOptionsBinding.RequiresUnreferencedCodeMessage)]
    [RequiresDynamicCode(ExecutorOptionsBinding.RequiresDynamicCodeMessage)]
    public static OptionsBuilder<BoundedExecutorOptions> Bind(
        this OptionsBuilder<BoundedExecutorOptions> optionsBuilder,
        IConfiguration config,
        Action<BinderOptions>? configureBinder)
    {
        ArgumentNullException.ThrowIfNull(optionsBuilder);
        ArgumentNullException.ThrowIfNull(config);
        optionsBuilder.Configure(options => ExecutorOptionsBinding.Bind(config, options, configureBinder));
        optionsBuilder.Services.AddSingleton<IOptionsChangeTokenSource<BoundedExecutorOptions>>(
            new ConfigurationChangeTokenSource<BoundedExecutorOptions>(optionsBuilder.Name, config));
        return optionsBuilder;
    }
}
