using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;

namespace BoundedWork.Hosting.Internal;

/// <summary>
/// Creates executor options as the standard factory does, with two differences. A value configuration cannot
/// convert (an unknown <c>RejectionPolicy</c> string, say) fails as an <see cref="OptionsValidationException"/>
/// naming the executor and the setting, not as a raw binder exception. And once an executor's options have been
/// valid, an invalid reload is logged and the last valid options are returned instead, so
/// <see cref="IOptionsMonitor{TOptions}"/> keeps working and the executor keeps its last good size.
/// </summary>
internal sealed class LastGoodOptionsFactory : IOptionsFactory<BoundedExecutorOptions>
{
    private const string BinderAssemblyName = "Microsoft.Extensions.Configuration.Binder";

    private readonly OptionsFactory<BoundedExecutorOptions> _inner;
    private readonly LastGoodOptionsStore _store;
    private readonly ILogger _logger;

    public LastGoodOptionsFactory(
        IEnumerable<IConfigureOptions<BoundedExecutorOptions>> setups,
        IEnumerable<IPostConfigureOptions<BoundedExecutorOptions>> postConfigures,
        IEnumerable<IValidateOptions<BoundedExecutorOptions>> validations,
        LastGoodOptionsStore store,
        IServiceProvider services)
    {
        _inner = new OptionsFactory<BoundedExecutorOptions>(setups, postConfigures, validations);
        _store = store;
        _logger = (services.GetService<ILoggerFactory>() ?? NullLoggerFactory.Instance).CreateLogger<BoundedExecutor>();
    }

    public BoundedExecutorOptions Create(string name)
    {
        BoundedExecutorOptions options;
        try
        {
            options = _inner.Create(name);
        }
        catch (OptionsValidationException ex)
        {
            return LastGoodOrThrow(name, ex);
        }
        catch (InvalidOperationException ex) when (string.Equals(ex.Source, BinderAssemblyName, StringComparison.Ordinal))
        {
            return LastGoodOrThrow(name, new OptionsValidationException(name, typeof(BoundedExecutorOptions), [DescribeBindingFailure(name, ex)]));
        }

        _store.Remember(name, options);
        return options;
    }

    private BoundedExecutorOptions LastGoodOrThrow(string name, OptionsValidationException exception)
    {
        if (!_store.TryGet(name, out var lastGood))
        {
            throw exception;
        }

        _logger.InvalidReload(name, lastGood.WorkerCount, string.Join(" ", exception.Failures));
        return lastGood;
    }

    private static string DescribeBindingFailure(string name, InvalidOperationException exception)
    {
        // The binder's message names the configuration path (…:RejectionPolicy) and the value it could not convert.
        var message = $"Executor '{name}': {exception.Message}";
        if (exception.Message.Contains(nameof(RejectionPolicy), StringComparison.Ordinal))
        {
            message += $" RejectionPolicy must be one of {string.Join(", ", Enum.GetNames<RejectionPolicy>())}.";
        }

        return message;
    }
}
